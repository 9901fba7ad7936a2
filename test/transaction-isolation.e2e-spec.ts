import { DataSource } from 'typeorm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DatabaseService } from '../src/database/database.service.js';
import { newId, nowIso } from '../src/common/ids.js';
import { startApp, type TestApp } from './helpers/app.js';
import { adminClient, createUser, unique, type CreatedUser } from './helpers/factories.js';
import { request, type Client } from './helpers/http.js';

/**
 * Work that runs while another request's transaction is open must neither see that transaction's
 * uncommitted rows nor be committed or rolled back with it. SQLite shares one connection between
 * every caller, so this is where it can go wrong; PostgreSQL runs the same checks.
 */
describe('transaction isolation between concurrent requests', () => {
  let t: TestApp;
  let admin: Client;
  let author: CreatedUser;

  beforeAll(async () => {
    t = await startApp();
    admin = await adminClient(t.url);
    author = await createUser(t.url);
  });
  afterAll(async () => {
    await t?.close();
  });

  /** A batch that inserts `n` users (password hashing yields between inserts) and then fails (409). */
  function failingBatch(marker: string, n: number) {
    const users = Array.from({ length: n }, (_, i) => ({
      name: `${marker} ${i}`,
      email: `${marker}-${i}@example.com`,
      password: `pw-${marker}-${i}`,
    }));
    const operations = [
      ...users.map((data) => ({ op: 'create', data })),
      { op: 'create', data: { name: `${marker} dup`, email: users[0].email } },
    ];
    return { users, done: admin.post('/api/v1/users/batch', { operations }) };
  }

  it('never lists, finds or signs in a user of a batch that has not committed (and then fails)', async () => {
    const marker = unique('iso');
    const { users, done } = failingBatch(marker, 15);
    let finished = false;
    void done.finally(() => (finished = true));

    const seen: string[] = [];
    const loginStatuses: number[] = [];
    let readsDuringBatch = 0;
    const reader = (async () => {
      while (!finished) {
        readsDuringBatch += 1;
        const list = await admin.get('/api/v1/users?limit=100&sort=-created_at');
        expect(list.status).toBe(200);
        seen.push(
          ...(list.body.data as { name: string }[])
            .map((u) => u.name)
            .filter((name) => name.startsWith(marker)),
        );
      }
    })();
    const signer = (async () => {
      while (!finished) {
        const res = await request(t.url, '/api/v1/auth/token', {
          method: 'POST',
          body: { email: users[0].email, password: users[0].password },
        });
        loginStatuses.push(res.status);
      }
    })();

    const res = await done;
    await Promise.all([reader, signer]);
    expect(res.status).toBe(409);
    expect(res.body.error.details[0]).toMatchObject({ index: 15, field: 'email' });
    expect(readsDuringBatch).toBeGreaterThan(0);
    expect(seen).toEqual([]);
    expect(loginStatuses.length).toBeGreaterThan(0);
    expect(new Set(loginStatuses)).toEqual(new Set([401]));
    // and nothing of the batch was stored
    const after = await admin.get('/api/v1/users?limit=100&sort=-created_at');
    expect(after.body.data.filter((u: { name: string }) => u.name.startsWith(marker))).toEqual([]);
  });

  it("never rolls back a concurrent request's write with another request's failing transaction", async () => {
    const marker = unique('iso');
    const { done } = failingBatch(marker, 10);
    let finished = false;
    void done.finally(() => (finished = true));

    const created: string[] = [];
    const writer = (async () => {
      while (!finished) {
        const res = await author.client.post('/api/v1/posts', {
          title: `${marker} post`,
          body: 'x',
        });
        expect(res.status).toBe(201);
        created.push(res.body.data.id as string);
      }
    })();
    expect((await done).status).toBe(409);
    await writer;

    expect(created.length).toBeGreaterThan(0);
    for (const id of created) {
      const res = await author.client.get(`/api/v1/posts/${id}`);
      expect(res.status, id).toBe(200);
    }
  });

  it('lets a health check and reads run again right after the failed transaction', async () => {
    const marker = unique('iso');
    const { done } = failingBatch(marker, 3);
    const [batch, ready, list] = await Promise.all([
      done,
      request(t.url, '/health/ready'),
      admin.get('/api/v1/users?limit=1'),
    ]);
    expect(batch.status).toBe(409);
    expect(ready.status).toBe(200);
    expect(list.status).toBe(200);
  });

  it('keeps the raw fast path and TypeORM reads out of an open transaction, and its rollback', async () => {
    const db = t.app.get(DatabaseService);
    const ds = t.app.get(DataSource);
    const id = newId('user');
    const p = (n: number) => db.p(n);
    const select = `SELECT id FROM users WHERE id = ${p(1)}`;
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    let inserted!: (inside: () => Promise<unknown>) => void;
    const didInsert = new Promise<() => Promise<unknown>>((resolve) => (inserted = resolve));

    const tx = db.transaction(async ({ manager }) => {
      const now = nowIso();
      await manager.query(
        `INSERT INTO users (id, name, role, created_at, updated_at) VALUES (${p(1)}, ${p(2)}, ${p(3)}, ${p(4)}, ${p(5)})`,
        [id, 'uncommitted', 'USER', now, now],
      );
      // the transaction sees its own row
      expect(await manager.query(select, [id])).toHaveLength(1);
      inserted(() => manager.query(select, [id]));
      await held;
      throw new Error('roll back');
    });
    const readInside = await didInsert;
    const order: string[] = [];
    const fast = db.query<{ id: string }>(select, [id]).then((rows) => {
      order.push('fast');
      return rows;
    });
    const typeorm = ds.query<{ id: string }[]>(select, [id]).then((rows) => {
      order.push('typeorm');
      return rows;
    });
    if (db.dialect === 'sqlite') {
      // the sentinel: a read of the transaction itself, issued after both. Statements reach the one
      // connection in the order they are issued, so had a read not waited for the transaction it
      // would have run (inside it) before this one
      expect(await readInside()).toHaveLength(1);
      expect(order).toEqual([]);
    } else {
      // a connection of their own each: both reads end while the transaction is still open
      await Promise.all([fast, typeorm]);
    }
    order.push('rollback');
    release();
    await expect(tx).rejects.toThrow('roll back');
    expect(await fast).toEqual([]);
    expect(await typeorm).toEqual([]);
    if (db.dialect === 'sqlite') {
      // one connection: the reads waited for the transaction to end
      expect(order[0]).toBe('rollback');
    }
  });

  it('never lets a write from outside join (and roll back with) an open transaction', async () => {
    const db = t.app.get(DatabaseService);
    const ds = t.app.get(DataSource);
    const p = (n: number) => db.p(n);
    const insert = `INSERT INTO users (id, name, role, created_at, updated_at) VALUES (${p(1)}, ${p(2)}, ${p(3)}, ${p(4)}, ${p(5)})`;
    const row = (name: string) => {
      const now = nowIso();
      return [newId('user'), name, 'USER', now, now];
    };
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    let begun!: (inside: () => Promise<unknown>) => void;
    const didBegin = new Promise<() => Promise<unknown>>((resolve) => (begun = resolve));
    const tx = db.transaction(async ({ manager }) => {
      await manager.query(insert, row('doomed'));
      begun(() => manager.query('SELECT 1'));
      await held;
      throw new Error('roll back');
    });
    const queryInside = await didBegin;
    const viaFastPath = row('fast path write');
    const viaTypeorm = row('typeorm write');
    const writes = Promise.all([db.query(insert, viaFastPath), ds.query(insert, viaTypeorm)]);
    if (db.dialect === 'sqlite') {
      // the sentinel: a statement of the transaction, issued after both writes (statements reach
      // the one connection in the order they are issued: a write that joined the transaction has
      // run by the time it answers)
      await queryInside();
    } else {
      // a connection of their own each: both writes commit while the transaction is still open
      await writes;
    }
    release();
    await expect(tx).rejects.toThrow('roll back');
    await writes;
    const select = `SELECT name FROM users WHERE id IN (${p(1)}, ${p(2)})`;
    const stored = await db.query<{ name: string }>(select, [viaFastPath[0], viaTypeorm[0]]);
    expect(stored.map((r) => r.name).sort()).toEqual(['fast path write', 'typeorm write']);
  });
});
