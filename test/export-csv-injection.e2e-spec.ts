import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_EMAIL, ADMIN_PASSWORD, startApp, type TestApp } from './helpers/app.js';
import {
  adminClient,
  createUser,
  tokenFor,
  unique,
  type CreatedUser,
} from './helpers/factories.js';
import type { Client } from './helpers/http.js';

/** CSV exports neutralise cells a spreadsheet would run as a formula (docs/admin.md "Exports"). */
describe('CSV export formula cells', () => {
  let t: TestApp;
  let admin: Client;
  let token: string;

  beforeAll(async () => {
    t = await startApp();
    admin = await adminClient(t.url);
    token = await tokenFor(t.url, ADMIN_EMAIL, ADMIN_PASSWORD);
  });
  afterAll(() => t?.close());

  async function exportText(path: string, accept: string): Promise<string> {
    const res = await fetch(`${t.url}${path}`, {
      headers: { authorization: `Bearer ${token}`, accept },
    });
    expect(res.status).toBe(200);
    return res.text();
  }

  it("prefixes text cells starting with =, +, - or @ with ' in CSV; numbers, JSON cells and NDJSON stay as they are", async () => {
    const names = ['=1+2', '+SUM(1,2)', '-5', '@A1', 'plain'];
    const users: CreatedUser[] = [];
    for (const name of names) {
      users.push(await createUser(t.url, { name, age: 5 }));
    }
    const formulaEmail = await createUser(t.url, { email: `=${unique()}@example.com` });

    const csv = (await exportText('/api/v1/users/export', 'text/csv')).split('\r\n');
    const line = (id: string) => csv.find((l) => l.startsWith(`${id},`));
    expect(line(users[0].id)).toMatch(new RegExp(`^${users[0].id},'=1\\+2,`));
    // a comma makes the field quoted: the ' is inside the quotes
    expect(line(users[1].id)).toContain(`,"'+SUM(1,2)",`);
    expect(line(users[2].id)).toContain(`,'-5,`);
    expect(line(users[3].id)).toContain(`,'@A1,`);
    expect(line(users[4].id)).toContain(`,plain,${users[4].email},USER,5,`);
    expect(line(formulaEmail.id)).toContain(`,'${formulaEmail.email},`);

    // NDJSON is JSON: its values are never run, so they are sent as they are
    const ndjson = (await exportText('/api/v1/users/export', 'application/x-ndjson'))
      .trimEnd()
      .split('\n')
      .map((l) => JSON.parse(l) as { id: string; name: string; email: string });
    expect(ndjson.find((u) => u.id === users[0].id)?.name).toBe('=1+2');
    expect(ndjson.find((u) => u.id === formulaEmail.id)?.email).toBe(formulaEmail.email);

    // an order's items are a JSON cell (it starts with `[`), its total a number: unchanged
    const order = await admin.post(`/api/v1/users/${users[0].id}/orders`, {
      currency: 'EUR',
      items: [{ sku: 'SKU-1', quantity: 1, unit_price_cents: 250 }],
    });
    expect(order.status, order.text).toBe(201);
    const orders = (await exportText('/api/v1/orders/export', 'text/csv')).split('\r\n');
    const orderLine = orders.find((l) => l.startsWith(`${order.body.data.id as string},`));
    expect(orderLine).toContain(`,"[{""sku"":""SKU-1"",`);
    expect(orderLine).toContain(`,250,EUR,`);
  });
});
