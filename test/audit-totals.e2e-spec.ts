import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AuditService } from '../src/audit/audit.service.js';
import { newId } from '../src/common/ids.js';
import { CountersRepository } from '../src/database/counters.repository.js';
import { DatabaseService } from '../src/database/database.service.js';
import { ADMIN_EMAIL, ADMIN_PASSWORD, startApp, type TestApp } from './helpers/app.js';
import { createUser, tokenFor, type CreatedUser } from './helpers/factories.js';
import { client, type Client } from './helpers/http.js';
import { listAll as listAllOf } from './helpers/list-all.js';
import { gql } from './graphql-client.js';

/**
 * Exact totals of the audit log (docs/admin.md "Audit log"): counters for no filter and for one of
 * `action`, `actor_id`, `target_id`; calendar counters plus a COUNT of a bound's own minute for
 * `since`/`until`; a COUNT otherwise. Entries written through the API fall in the last minute or
 * two, so most entries here are written straight into the table with times spread over four years,
 * their counters rebuilt by `reconcile(true)`. Every total is checked against the rows the list
 * returns, and the counters against a recount after more audited changes and after the retention
 * purge.
 */
describe('audit log totals', () => {
  let t: TestApp;
  let admin: Client;
  let adminToken: string;
  let counters: CountersRepository;
  let users: CreatedUser[];
  const actions = ['user.created', 'user.role_changed', 'api_key.created', 'order.status_changed'];
  const instants: string[] = [];

  const listAll = (query: string) => listAllOf(admin, `/api/v1/audit-events?limit=100&${query}`);

  beforeAll(async () => {
    t = await startApp();
    adminToken = await tokenFor(t.url, ADMIN_EMAIL, ADMIN_PASSWORD);
    admin = client(t.url, { bearer: adminToken });
    counters = t.app.get(CountersRepository);
    // audited through the API: user.created (x3), user.role_changed
    users = [await createUser(t.url), await createUser(t.url), await createUser(t.url)];
    const promoted = await admin.patch(`/api/v1/users/${users[0].id}`, { role: 'ADMIN' });
    expect(promoted.status, promoted.text).toBe(200);
    const db = t.app.get(DatabaseService);
    const p = (n: number) => db.p(n);
    const base = Date.parse('2023-01-01T00:00:00.000Z');
    for (let i = 0; i < 150; i++) {
      const at = new Date(
        i % 10 === 0
          ? Date.parse('2024-02-29T23:59:30.000Z') + i * 211
          : base + ((i * 7_919_113_337) % (4 * 365 * 86_400_000)),
      ).toISOString();
      instants.push(at);
      await db.query(
        `INSERT INTO audit_events (id, at, actor_type, actor_id, on_behalf_of, action, target_type,
           target_id, changes, request_id, ip)
         VALUES (${p(1)}, ${p(2)}, ${p(3)}, ${p(4)}, NULL, ${p(5)}, 'user', ${p(6)}, '{}', NULL, NULL)`,
        [
          newId('auditEvent'),
          at,
          i % 7 === 0 ? 'system' : 'user',
          i % 7 === 0 ? null : users[i % 3].id,
          actions[i % actions.length],
          users[(i + 1) % 3].id,
        ],
      );
    }
    await counters.reconcile(true);
    expect(await counters.reconcile(false)).toEqual([]);
  });

  afterAll(async () => {
    await t?.close();
  });

  async function expectExact(queries: string[]) {
    let nonEmpty = 0;
    for (const q of queries) {
      const { total, rows } = await listAll(q);
      expect(total, q).toBe(rows);
      nonEmpty += rows > 0 ? 1 : 0;
    }
    return nonEmpty;
  }

  it('every filter and combination counts exactly', async () => {
    const sorted = [...instants].sort();
    const enc = encodeURIComponent;
    const bounds = [
      sorted[0],
      '2024-02-29T23:59:30.000Z',
      '2024-02-29T23:59:59.999Z',
      '2024-03-01T00:00:00.000Z',
      sorted[Math.floor(sorted.length / 2)],
      sorted[sorted.length - 1],
    ];
    const queries = ['', `actor_id=${users[1].id}`, `target_id=${users[2].id}`];
    for (const action of actions) {
      queries.push(`action=${action}`);
    }
    for (const since of [undefined, ...bounds]) {
      for (const until of [undefined, ...bounds.slice(1)]) {
        if (!since && !until) {
          continue;
        }
        const range = [since ? `since=${enc(since)}` : '', until ? `until=${enc(until)}` : '']
          .filter(Boolean)
          .join('&');
        queries.push(range, `${range}&action=${actions[queries.length % actions.length]}`);
      }
    }
    // combinations the counters do not answer: a COUNT
    queries.push(
      `actor_id=${users[1].id}&action=user.created`,
      `target_id=${users[2].id}&since=${enc(bounds[1])}`,
    );
    expect(await expectExact(queries)).toBeGreaterThan(queries.length / 2);
  });

  it('GraphQL totalCount agrees with REST', async () => {
    const since = '2024-02-29T23:59:31.000Z';
    const rest = await listAll(`since=${encodeURIComponent(since)}&action=user.created`);
    const res = await gql(
      t.url,
      `{ auditEvents(filter: {since: "${since}", action: "user.created"}, first: 1) { totalCount } }`,
      { auth: { bearer: adminToken } },
    );
    expect(res.body.errors).toBeUndefined();
    expect(res.body.data.auditEvents.totalCount).toBe(rest.total);
  });

  it('audited changes and the retention purge keep every counter exact', async () => {
    expect((await admin.delete(`/api/v1/users/${users[2].id}`)).status).toBe(204);
    expect(await counters.reconcile(false)).toEqual([]);
    const before = await listAll('');
    // entries older than AUDIT_RETENTION_DAYS (365) go: about a quarter of the spread ones
    const purged = await t.app.get(AuditService).purge(Date.parse('2025-01-01T00:00:00.000Z'));
    expect(purged).toBeGreaterThan(0);
    expect(await counters.reconcile(false)).toEqual([]);
    const after = await listAll('');
    expect(after.total).toBe(before.total - purged);
    expect(await expectExact(['action=user.created', `since=2023-06-01T00:00:00Z`])).toBe(2);
  });
});
