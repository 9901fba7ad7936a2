import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DataSource } from 'typeorm';
import { newId } from '../src/common/ids.js';
import { CountersRepository } from '../src/database/counters.repository.js';
import { ADMIN_EMAIL, ADMIN_PASSWORD, startApp, type TestApp } from './helpers/app.js';
import { createUser, tokenFor, unique } from './helpers/factories.js';
import { client, type Client } from './helpers/http.js';

/**
 * The exports over several database batches (docs/admin.md "Exports": keyset batches of 500, each
 * emptied once written): byte for byte the list's items, in the list's order, across batch
 * boundaries and ties. An app of their own: their rows (written straight into the tables) would
 * change the lists the other admin tests check.
 */
describe('exports over several batches', () => {
  let t: TestApp;
  let admin: Client;
  let adminToken: string;

  beforeAll(async () => {
    t = await startApp();
    adminToken = await tokenFor(t.url, ADMIN_EMAIL, ADMIN_PASSWORD);
    admin = client(t.url, { bearer: adminToken });
  });

  afterAll(async () => {
    await t?.close();
  });

  it('streams several database batches (1,234 orders, 500 a batch) in the list order, byte for byte the list items', async () => {
    // straight into the table: 1,234 orders through the API would take long; totals repeat, so
    // the batches' keyset continues on ties (by id) as well as on the total
    const carol = await createUser(t.url, { name: `Carol ${unique('c')}` });
    const ds = t.app.get(DataSource);
    const pg = ds.options.type === 'postgres';
    const base = Date.parse('2021-01-01T00:00:00.000Z');
    const n = 1234;
    const rows = Array.from({ length: n }, (_, i) => [
      newId('order'),
      carol.id,
      ['pending', 'paid', 'shipped'][i % 3],
      JSON.stringify([{ sku: `SKU,"${i % 7}"`, quantity: 1 + (i % 3), unit_price_cents: 100 }]),
      100 + ((i * 37) % 200),
      'EUR',
      new Date(base + i * 1000).toISOString(),
      new Date(base + i * 1000).toISOString(),
    ]);
    await ds.transaction(async (manager) => {
      for (let start = 0; start < n; start += 500) {
        const params: unknown[] = [];
        const values = rows.slice(start, start + 500).map((row) => {
          const marks = row.map((v) => {
            params.push(v);
            return pg ? `$${params.length}` : '?';
          });
          return `(${marks.join(', ')})`;
        });
        await manager.query(
          `INSERT INTO orders (id, user_id, status, items, total_cents, currency, created_at, updated_at) VALUES ${values.join(', ')}`,
          params,
        );
      }
    });
    await t.app.get(CountersRepository).reconcile(true);

    const filter = `user_id=${carol.id}&sort=-total_cents`;
    const listed: unknown[] = [];
    for (let page = 1; listed.length < n; page++) {
      const res = await admin.get(`/api/v1/orders?${filter}&limit=100&page=${page}`);
      expect(res.status, res.text).toBe(200);
      expect(res.body.data.length).toBeGreaterThan(0);
      listed.push(...(res.body.data as unknown[]));
    }
    const ndjson = await fetch(`${t.url}/api/v1/orders/export?${filter}`, {
      headers: { authorization: `Bearer ${adminToken}` },
    });
    expect(ndjson.status).toBe(200);
    expect(await ndjson.text()).toBe(listed.map((o) => `${JSON.stringify(o)}\n`).join(''));

    const csv = await fetch(`${t.url}/api/v1/orders/export?${filter}&status=paid`, {
      headers: { authorization: `Bearer ${adminToken}`, accept: 'text/csv' },
    });
    expect(csv.status).toBe(200);
    const lines = (await csv.text()).split('\r\n');
    const paid = listed.filter((o) => (o as { status: string }).status === 'paid') as {
      id: string;
      items: unknown;
    }[];
    expect(lines).toHaveLength(1 + paid.length + 1); // the header, a line per order, '' after the last
    expect(lines.at(-1)).toBe('');
    expect(lines.slice(1, -1).map((l) => l.slice(0, l.indexOf(',')))).toEqual(
      paid.map((o) => o.id),
    );
    // items as JSON text, quoted with its quotes doubled (RFC 4180)
    expect(lines[1]).toContain(`"${JSON.stringify(paid[0].items).replace(/"/g, '""')}"`);
  });

  it('streams users over several database batches in the list order, byte for byte the list items', async () => {
    // 600 GUESTs straight into the table, names repeating: the keyset continues on ties by id
    const ds = t.app.get(DataSource);
    const pg = ds.options.type === 'postgres';
    const tag = unique('x');
    const base = Date.parse('2021-06-01T00:00:00.000Z');
    const rows = Array.from({ length: 600 }, (_, i) => [
      newId('user'),
      `Export ${tag} ${i % 40}`,
      `export.${tag}.${i}@example.com`,
      `export.${tag}.${i}@example.com`,
      'GUEST',
      new Date(base + i * 1000).toISOString(),
      new Date(base + i * 1000).toISOString(),
    ]);
    const params: unknown[] = [];
    const values = rows.map(
      (row) =>
        `(${row
          .map((v) => {
            params.push(v);
            return pg ? `$${params.length}` : '?';
          })
          .join(', ')})`,
    );
    await ds.query(
      `INSERT INTO users (id, name, email, email_normalized, role, created_at, updated_at) VALUES ${values.join(', ')}`,
      params,
    );
    await t.app.get(CountersRepository).reconcile(true);

    const listed: unknown[] = [];
    for (let page = 1; ; page++) {
      const res = await admin.get(`/api/v1/users?role=GUEST&sort=name&limit=100&page=${page}`);
      expect(res.status, res.text).toBe(200);
      listed.push(...(res.body.data as unknown[]));
      if (res.body.data.length < 100) {
        break;
      }
    }
    expect(listed.length).toBeGreaterThanOrEqual(600);
    const res = await fetch(`${t.url}/api/v1/users/export?role=GUEST&sort=name`, {
      headers: { authorization: `Bearer ${adminToken}` },
    });
    expect(res.status).toBe(200);
    expect(await res.text()).toBe(listed.map((u) => `${JSON.stringify(u)}\n`).join(''));
  });
});
