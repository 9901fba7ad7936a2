import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ChangeRecord, type ChangeSubscriber } from '../src/changes/change-record.js';
import type { Change } from '../src/changes/change.js';
import { CountersRepository, CountKeys } from '../src/database/counters.repository.js';
import { DatabaseService } from '../src/database/database.service.js';
import type { Caller } from '../src/identity/caller.js';
import { Role } from '../src/identity/role.js';
import { startApp, type TestApp } from './helpers/app.js';
import { createUser, unique, type CreatedUser } from './helpers/factories.js';

/**
 * The change record (docs/data-integrity.md, "The change record") on the real app and database:
 * its subscribers write inside the change's transaction and roll back with it, the after-commit
 * ones run only once the transaction committed, and a failing subscriber fails the change.
 */
describe('change record', () => {
  let t: TestApp;
  let changes: ChangeRecord;
  let db: DatabaseService;
  let counters: CountersRepository;
  let alice: CreatedUser;
  const admin: Caller = {
    userId: 'usr_00000000000000000000000000',
    role: Role.ADMIN,
    method: 'jwt',
  };

  beforeAll(async () => {
    t = await startApp();
    changes = t.app.get(ChangeRecord);
    db = t.app.get(DatabaseService);
    counters = t.app.get(CountersRepository);
    alice = await createUser(t.url);
  });
  afterAll(async () => {
    await t?.close();
  });

  async function auditRows(targetId: string): Promise<number> {
    const rows = await db.query<{ n: number | string }>(
      `SELECT COUNT(*) AS n FROM audit_events WHERE target_id = ${db.p(1)}`,
      [targetId],
    );
    return Number(rows[0]?.n ?? 0);
  }

  /** A subscriber of its own for one test: what it saw, in order. */
  function watch(): { seen: string[]; stop: () => void } {
    const seen: string[] = [];
    const subscriber: ChangeSubscriber = {
      name: 'test-watch',
      inTransaction: (_tx, change) => void seen.push(`in:${change.type}`),
      afterCommit: (change) => void seen.push(`after:${change.type}`),
    };
    return { seen, stop: changes.subscribe(subscriber) };
  }

  it('runs the in-transaction subscribers with the change, and their writes commit with it', async () => {
    const endpointId = unique('whk_commit');
    const change: Change = { type: 'webhook.deleted', endpointId, actor: admin };
    const { seen, stop } = watch();
    let visibleAfterCommit: number | undefined;
    const afterCommitCheck = changes.subscribe({
      name: 'test-visible',
      afterCommit: async () => {
        visibleAfterCommit = await auditRows(endpointId);
      },
    });
    try {
      await db.transaction(async (tx) => {
        await changes.record(tx, change);
        // the audit entry is written in the transaction, the after-commit work has not run yet
        const inTx = await tx.manager.query<{ n: number | string }[]>(
          `SELECT COUNT(*) AS n FROM audit_events WHERE target_id = ${db.p(1)}`,
          [endpointId],
        );
        expect(Number(inTx[0]?.n)).toBe(1);
        expect(changes.changesOf(tx)).toEqual([change]);
        expect(seen).toEqual(['in:webhook.deleted']);
      });
    } finally {
      stop();
      afterCommitCheck();
    }
    expect(seen).toEqual(['in:webhook.deleted', 'after:webhook.deleted']);
    // the after-commit subscriber ran once the entry was committed (read outside the transaction)
    expect(visibleAfterCommit).toBe(1);
    expect(await auditRows(endpointId)).toBe(1);
  });

  it('rolls the subscribers writes back with the transaction, and runs no after-commit subscriber', async () => {
    const endpointId = unique('whk_rollback');
    const { seen, stop } = watch();
    try {
      await expect(
        db.transaction(async (tx) => {
          await changes.record(tx, { type: 'webhook.deleted', endpointId, actor: admin });
          throw new Error('the change fails after it was recorded');
        }),
      ).rejects.toThrow('the change fails after it was recorded');
    } finally {
      stop();
    }
    expect(seen).toEqual(['in:webhook.deleted']);
    expect(await auditRows(endpointId)).toBe(0);
  });

  it('a failing in-transaction subscriber rolls the whole change back: row, counters, outbox', async () => {
    const title = unique('doomed-');
    const postsBefore = await counters.get(CountKeys.posts());
    const { seen, stop: stopWatch } = watch();
    let outboxInTx: number | undefined;
    const stop = changes.subscribe({
      name: 'test-failing',
      inTransaction: async (tx, change) => {
        if (change.type === 'post.created' && change.post.title === title) {
          // the outbox subscriber (subscribed before) has written its row in this transaction
          const rows = await tx.manager.query<{ n: number | string }[]>(
            `SELECT COUNT(*) AS n FROM webhook_events WHERE type = 'post.created' AND payload LIKE ${db.p(1)}`,
            [`%${title}%`],
          );
          outboxInTx = Number(rows[0]?.n);
          throw new Error('subscriber refuses');
        }
      },
    });
    let status: number;
    try {
      status = (await alice.client.post('/api/v1/posts', { title, body: 'never stored' })).status;
    } finally {
      stop();
      stopWatch();
    }
    expect(status).toBe(500);
    // the counters and outbox subscribers ran before the failing one: all of it rolled back
    expect(seen).toEqual(['in:post.created']);
    expect(outboxInTx).toBe(1);
    const posts = await db.query<{ n: number | string }>(
      `SELECT COUNT(*) AS n FROM posts WHERE title = ${db.p(1)}`,
      [title],
    );
    expect(Number(posts[0]?.n)).toBe(0);
    const events = await db.query<{ n: number | string }>(
      `SELECT COUNT(*) AS n FROM webhook_events WHERE type = 'post.created' AND payload LIKE ${db.p(1)}`,
      [`%${title}%`],
    );
    expect(Number(events[0]?.n)).toBe(0);
    expect(await counters.get(CountKeys.posts())).toBe(postsBefore);

    // the same write without the failing subscriber commits with all its effects
    const ok = await alice.client.post('/api/v1/posts', { title, body: 'stored' });
    expect(ok.status).toBe(201);
    expect(await counters.get(CountKeys.posts())).toBe(postsBefore + 1);
  });

  it('an after-commit subscriber that throws neither undoes the change nor stops the others', async () => {
    const endpointId = unique('whk_after');
    const { seen, stop } = watch();
    const first = changes.subscribe({
      name: 'test-throwing',
      afterCommit: () => {
        throw new Error('after-commit failure');
      },
    });
    // subscribed after the throwing one: still runs
    const { seen: later, stop: stopLater } = watch();
    try {
      await db.transaction((tx) =>
        changes.record(tx, { type: 'webhook.deleted', endpointId, actor: admin }),
      );
    } finally {
      stop();
      first();
      stopLater();
    }
    expect(seen).toEqual(['in:webhook.deleted', 'after:webhook.deleted']);
    expect(later).toEqual(['in:webhook.deleted', 'after:webhook.deleted']);
    expect(await auditRows(endpointId)).toBe(1);
  });
});
