import { DataSource } from 'typeorm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CountersRepository } from '../src/database/counters.repository.js';
import { gql } from './graphql-client.js';
import { ADMIN_EMAIL, ADMIN_PASSWORD, startApp, type TestApp } from './helpers/app.js';
import {
  adminClient,
  createUser,
  tokenFor,
  unique,
  type CreatedUser,
} from './helpers/factories.js';
import type { Client } from './helpers/http.js';

/**
 * The list counters (`list_counts`) behind `meta.total` and `totalCount` stay equal to COUNT(*)
 * after every kind of write, REST and GraphQL, concurrent ones and rolled-back ones included.
 */
describe('list counters', () => {
  let t: TestApp;
  let admin: Client;
  let ds: DataSource;
  let counters: CountersRepository;
  let alice: CreatedUser;

  const count = async (sql: string, params: unknown[] = []) => {
    const rows = await ds.query<{ n: number | string }[]>(sql, params);
    return Number(rows[0]?.n ?? 0);
  };
  const p = (n: number) => (ds.options.type === 'postgres' ? `$${n}` : '?');
  let adminBearer: string;

  beforeAll(async () => {
    t = await startApp();
    admin = await adminClient(t.url);
    adminBearer = await tokenFor(t.url, ADMIN_EMAIL, ADMIN_PASSWORD);
    ds = t.app.get(DataSource);
    counters = t.app.get(CountersRepository);
    alice = await createUser(t.url, { role: 'USER' });
  });
  afterAll(async () => {
    await t.close();
  });

  it('equal COUNT(*) after a mix of REST and GraphQL writes, concurrent and rolled back', async () => {
    const auth = { bearer: alice.token };
    // users: REST create, GraphQL create + bulkCreate, role changes both ways, deletes both ways
    const guests = await Promise.all(
      Array.from({ length: 6 }, () => createUser(t.url, { role: 'GUEST' })),
    );
    const bulk = await gql(
      t.url,
      `mutation { bulkCreate(input: [{ name: "B1", email: "${unique()}@example.com" },
         { name: "B2", email: "${unique()}@example.com", role: GUEST }]) { id } }`,
      { auth: { bearer: adminBearer } },
    );
    expect(bulk.body.errors).toBeUndefined();
    expect((await admin.patch(`/api/v1/users/${guests[0].id}`, { role: 'ADMIN' })).status).toBe(
      200,
    );
    const promote = await gql(
      t.url,
      `mutation { updateUser(id: "${guests[1].id}", input: { role: USER }) { id role } }`,
      { auth: { bearer: adminBearer } },
    );
    expect(promote.body.errors).toBeUndefined();
    expect((await admin.delete(`/api/v1/users/${guests[2].id}`)).status).toBe(204);
    expect((await admin.delete(`/api/v1/users/${guests[2].id}`)).status).toBe(204); // again: no-op
    const del = await gql(t.url, `mutation { deleteUser(id: "${guests[3].id}") { id } }`, {
      auth: { bearer: adminBearer },
    });
    expect(del.body.errors).toBeUndefined();

    // a batch whose second operation fails: nothing is written, no counter moves
    const failing = await admin.post('/api/v1/users/batch', {
      operations: [
        { op: 'create', data: { name: 'Rolled back', email: `${unique()}@example.com` } },
        { op: 'update', id: guests[4].id, data: { role: 'ADMIN', email: alice.email } },
      ],
    });
    expect(failing.status).toBe(409);
    const failingBulk = await gql(
      t.url,
      `mutation { bulkCreate(input: [{ name: "X", email: "${unique()}@example.com" },
         { name: "Y", email: "${alice.email}" }]) { id } }`,
      { auth: { bearer: adminBearer } },
    );
    expect(failingBulk.body.errors?.[0]?.extensions?.code).toBe('CONFLICT');

    // posts: concurrent REST and GraphQL creates, deletes both ways
    const created = await Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        i % 2 === 0
          ? alice.client.post('/api/v1/posts', { title: `P${i}`, body: 'b' })
          : gql(t.url, `mutation { createPost(input: { title: "G${i}", body: "b" }) { id } }`, {
              auth,
            }),
      ),
    );
    const postIds = created.map((r) =>
      'data' in r.body && r.body.data && 'createPost' in r.body.data
        ? (r.body.data.createPost.id as string)
        : (r.body.data.id as string),
    );
    expect((await alice.client.delete(`/api/v1/posts/${postIds[0]}`)).status).toBe(204);
    const gqlDelete = await gql(t.url, `mutation { deletePost(id: "${postIds[1]}") { id } }`, {
      auth,
    });
    expect(gqlDelete.body.errors).toBeUndefined();

    // orders: creates both ways, status changes both ways
    const items = [{ sku: 'A-1', quantity: 2, unit_price_cents: 500 }];
    const orders = await Promise.all(
      Array.from({ length: 4 }, () =>
        alice.client.post(`/api/v1/users/${alice.id}/orders`, { items, currency: 'EUR' }),
      ),
    );
    const gqlOrder = await gql(
      t.url,
      `mutation { createOrder(userId: "${alice.id}", input: { currency: "EUR",
         items: [{ sku: "B-2", quantity: 1, unitPriceCents: 100 }] }) { id } }`,
      { auth },
    );
    expect(gqlOrder.body.errors).toBeUndefined();
    expect(
      (await admin.patch(`/api/v1/orders/${orders[0].body.data.id}`, { status: 'paid' })).status,
    ).toBe(200);
    const cancel = await gql(
      t.url,
      `mutation { updateOrderStatus(id: "${orders[1].body.data.id}", status: CANCELLED) { status } }`,
      { auth },
    );
    expect(cancel.body.errors).toBeUndefined();
    // an invalid transition (409) changes nothing
    expect(
      (await admin.patch(`/api/v1/orders/${orders[1].body.data.id}`, { status: 'paid' })).status,
    ).toBe(409);

    // rooms and messages, concurrent sends to one room
    const room = await alice.client.post('/api/v1/rooms', { name: unique('room') });
    expect(room.status).toBe(201);
    const gqlRoom = await gql(t.url, `mutation { createRoom(name: "${unique('r')}") { id } }`, {
      auth,
    });
    expect(gqlRoom.body.errors).toBeUndefined();
    await Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        i % 2 === 0
          ? alice.client.post(`/api/v1/rooms/${room.body.data.id}/messages`, { content: `m${i}` })
          : gql(
              t.url,
              `mutation { sendMessage(roomId: "${room.body.data.id}", content: "g${i}") { id } }`,
              { auth },
            ),
      ),
    );

    expect(await counters.reconcile(false)).toEqual([]);

    // and the totals the API reports are those counts
    const users = await admin.get('/api/v1/users?limit=1');
    expect(users.body.meta.total).toBe(
      await count('SELECT COUNT(*) AS n FROM users WHERE deleted_at IS NULL'),
    );
    const guestsList = await admin.get('/api/v1/users?role=GUEST&limit=1');
    expect(guestsList.body.meta.total).toBe(
      await count(`SELECT COUNT(*) AS n FROM users WHERE deleted_at IS NULL AND role = ${p(1)}`, [
        'GUEST',
      ]),
    );
    const alicePosts = await admin.get(`/api/v1/posts?author_id=${alice.id}&limit=1`);
    expect(alicePosts.body.meta.total).toBe(10);
    const pending = await alice.client.get(`/api/v1/users/${alice.id}/orders?status=pending`);
    expect(pending.body.meta.total).toBe(3);
    const messages = await alice.client.get(`/api/v1/rooms/${room.body.data.id}/messages?limit=1`);
    expect(messages.body.meta.total).toBe(10);
    const gqlTotals = await gql(
      t.url,
      `{ users(role: GUEST, first: 1) { totalCount }
         me { posts(first: 1) { totalCount } orders(first: 1, status: PENDING) { totalCount } }
         rooms(first: 1) { totalCount } }`,
      { auth },
    );
    expect(gqlTotals.body.errors).toBeUndefined();
    expect(gqlTotals.body.data.users.totalCount).toBe(guestsList.body.meta.total);
    expect(gqlTotals.body.data.me.posts.totalCount).toBe(10);
    expect(gqlTotals.body.data.me.orders.totalCount).toBe(3);
    expect(gqlTotals.body.data.rooms.totalCount).toBe(
      await count('SELECT COUNT(*) AS n FROM rooms'),
    );
  });

  it('reconcile() reports a counter that drifted and --fix rewrites it', async () => {
    await ds.query(`UPDATE list_counts SET n = n + 5 WHERE scope = ${p(1)}`, ['users']);
    const found = await counters.reconcile(false);
    expect(found).toEqual([
      { key: 'users', stored: expect.any(Number), actual: expect.any(Number) },
    ]);
    expect(found[0].stored - found[0].actual).toBe(5);
    expect(await counters.reconcile(true)).toHaveLength(1);
    expect(await counters.reconcile(false)).toEqual([]);
    const users = await admin.get('/api/v1/users?limit=1');
    expect(users.body.meta.total).toBe(found[0].actual);
  });
});
