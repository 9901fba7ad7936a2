import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId } from '../src/common/ids.js';
import { CountersRepository } from '../src/database/counters.repository.js';
import { DatabaseService } from '../src/database/database.service.js';
import { ADMIN_EMAIL, ADMIN_PASSWORD, startApp, type TestApp } from './helpers/app.js';
import { createUser, tokenFor, type CreatedUser } from './helpers/factories.js';
import { client, type Client } from './helpers/http.js';
import { listAll as listAllOf } from './helpers/list-all.js';
import { gql } from './graphql-client.js';

/**
 * Exact totals of the orders list across users with a date or total filter (docs/admin.md "Totals"):
 * sums of the range counters plus, for dates, a COUNT of the bound's own minute. Orders made through
 * the API all fall in the last minute or two, so most orders here are written straight into the
 * database with creation times spread over four years (month, day and year ends included), their
 * counters rebuilt by `reconcile(true)`, the recount `npm run counts:check -- --fix` runs. Every
 * total is then checked against the rows the list itself returns.
 */
describe('orders across users: totals of date and total filters', () => {
  let t: TestApp;
  let admin: Client;
  let adminToken: string;
  let counters: CountersRepository;
  let owner: CreatedUser;
  let leaving: CreatedUser;
  const instants: string[] = [];
  const totals = [0, 1, 15, 16, 17, 255, 256, 4095, 4096, 99_999, 2_147_483_647];
  const statuses = ['pending', 'paid', 'shipped', 'cancelled'];

  const listAll = (query: string) => listAllOf(admin, `/api/v1/orders?limit=100&${query}`);

  beforeAll(async () => {
    t = await startApp();
    adminToken = await tokenFor(t.url, ADMIN_EMAIL, ADMIN_PASSWORD);
    admin = client(t.url, { bearer: adminToken });
    counters = t.app.get(CountersRepository);
    owner = await createUser(t.url);
    leaving = await createUser(t.url);
    for (const cents of [300, 4096]) {
      const res = await admin.post(`/api/v1/users/${owner.id}/orders`, {
        currency: 'EUR',
        items: [{ sku: 'SKU-1', quantity: 1, unit_price_cents: cents }],
      });
      expect(res.status, res.text).toBe(201);
      instants.push(res.body.data.created_at as string);
    }
    // 120 orders from 2023 to 2026: around the ends of months and years, and several in one minute
    const base = [
      '2023-01-01T00:00:00.000Z',
      '2023-12-31T23:59:59.999Z',
      '2024-02-29T12:30:30.500Z',
      '2024-02-29T12:30:59.999Z',
      '2024-02-29T12:31:00.000Z',
      '2024-03-01T00:00:00.000Z',
      '2025-06-30T23:59:00.000Z',
      '2025-07-01T00:00:00.001Z',
      '2026-11-26T03:00:00.000Z',
    ].map(Date.parse);
    const db = t.app.get(DatabaseService);
    const p = (n: number) => db.p(n);
    for (let i = 0; i < 120; i++) {
      const at = new Date(
        i < base.length * 3
          ? base[i % base.length] + (Math.floor(i / base.length) - 1) * 7
          : base[0] + ((i * 7_919_113_337) % (4 * 365 * 86_400_000)),
      ).toISOString();
      instants.push(at);
      await db.query(
        `INSERT INTO orders (id, user_id, status, items, total_cents, currency, created_at, updated_at)
         VALUES (${p(1)}, ${p(2)}, ${p(3)}, ${p(4)}, ${p(5)}, ${p(6)}, ${p(7)}, ${p(8)})`,
        [
          newId('order'),
          i % 3 === 0 ? leaving.id : owner.id,
          statuses[i % statuses.length],
          '[{"sku":"SKU-1","quantity":1,"unit_price_cents":1}]',
          Math.min(totals[i % totals.length] + (i % 5 === 0 ? 0 : i), 2_147_483_647),
          'EUR',
          at,
          at,
        ],
      );
    }
    await counters.reconcile(true);
    expect(await counters.reconcile(false)).toEqual([]);
  });

  afterAll(async () => {
    await t?.close();
  });

  it('a date range counts exactly, for every status and for all, bounds inclusive as documented', async () => {
    const sorted = [...new Set(instants)].sort();
    const shift = (iso: string, ms: number) => new Date(Date.parse(iso) + ms).toISOString();
    const bounds = [
      sorted[0],
      shift(sorted[0], -1),
      '2024-02-29T12:30:00.000Z',
      '2024-02-29T12:31:00.000Z',
      shift('2024-02-29T12:31:00.000Z', -1),
      '2024-03-01T00:00:00.000Z',
      '2025-01-01T00:00:00.000Z',
      sorted[Math.floor(sorted.length / 3)],
      sorted[Math.floor(sorted.length / 2)],
      shift(sorted[Math.floor(sorted.length / 2)], 1),
      sorted[sorted.length - 1],
    ];
    const cases: string[] = [];
    for (const after of [undefined, ...bounds]) {
      for (const before of [undefined, ...bounds.slice(2, 9)]) {
        if (after === undefined && before === undefined) {
          continue;
        }
        const q = [
          after ? `created_after=${encodeURIComponent(after)}` : '',
          before ? `created_before=${encodeURIComponent(before)}` : '',
        ]
          .filter(Boolean)
          .join('&');
        cases.push(q);
      }
    }
    let nonEmpty = 0;
    for (const [i, q] of cases.entries()) {
      const query = i % 3 === 0 ? `${q}&status=${statuses[i % statuses.length]}` : q;
      const { total, rows } = await listAll(query);
      expect(total, query).toBe(rows);
      nonEmpty += rows > 0 ? 1 : 0;
    }
    expect(nonEmpty).toBeGreaterThan(cases.length / 2);
  });

  it('a total range counts exactly, for every status and for all', async () => {
    const bounds = [0, 1, 15, 16, 17, 100, 255, 256, 4096, 4200, 2_147_483_647];
    let nonEmpty = 0;
    for (const [i, min] of [undefined, ...bounds].entries()) {
      for (const max of [undefined, ...bounds.slice(3)]) {
        if (min === undefined && max === undefined) {
          continue;
        }
        const q = [
          min !== undefined ? `min_total_cents=${min}` : '',
          max !== undefined ? `max_total_cents=${max}` : '',
          i % 2 === 0 ? `status=${statuses[(max ?? 0) % statuses.length]}` : '',
        ]
          .filter(Boolean)
          .join('&');
        const { total, rows } = await listAll(q);
        expect(total, q).toBe(rows);
        nonEmpty += rows > 0 ? 1 : 0;
      }
    }
    expect(nonEmpty).toBeGreaterThan(40);
  });

  it('GraphQL totalCount agrees with REST', async () => {
    const after = '2024-02-29T12:30:30.000Z';
    const rest = await listAll(`created_after=${encodeURIComponent(after)}&status=paid`);
    const res = await gql(
      t.url,
      `{ orders(filter: {createdAfter: "${after}", status: PAID}, first: 1) { totalCount } }`,
      { auth: { bearer: adminToken } },
    );
    expect(res.body.errors).toBeUndefined();
    expect(res.body.data.orders.totalCount).toBe(rest.total);
    const priced = await listAll('min_total_cents=256&max_total_cents=4096');
    const byTotal = await gql(
      t.url,
      '{ orders(filter: {minTotalCents: 256, maxTotalCents: 4096}, first: 1) { totalCount } }',
      { auth: { bearer: adminToken } },
    );
    expect(byTotal.body.data.orders.totalCount).toBe(priced.total);
  });

  it('creating orders, changing their status and deleting their owner keep every counter exact', async () => {
    for (const cents of [16, 256]) {
      const res = await admin.post(`/api/v1/users/${leaving.id}/orders`, {
        currency: 'EUR',
        items: [{ sku: 'SKU-2', quantity: 1, unit_price_cents: cents }],
      });
      expect(res.status, res.text).toBe(201);
      const paid = await admin.patch(`/api/v1/orders/${res.body.data.id}`, { status: 'paid' });
      expect(paid.status, paid.text).toBe(200);
    }
    expect(await counters.reconcile(false)).toEqual([]);
    const before = await listAll('created_after=2023-06-01T00:00:00.000Z');
    expect((await admin.delete(`/api/v1/users/${leaving.id}`)).status).toBe(204);
    // the recount (live users' orders only) and the counters still agree, key by key
    expect(await counters.reconcile(false)).toEqual([]);
    const after = await listAll('created_after=2023-06-01T00:00:00.000Z');
    expect(after.total).toBe(after.rows);
    expect(after.total).toBeLessThan(before.total);
  });
});
