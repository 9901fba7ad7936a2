import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DatabaseService } from '../src/database/database.service.js';
import { ADMIN_EMAIL, ADMIN_PASSWORD, startApp, type TestApp } from './helpers/app.js';
import { createUser, type CreatedUser } from './helpers/factories.js';
import type { Credentials } from './helpers/http.js';
import { expectNoErrors, gql } from './subscriptions-helpers.js';

const ITEMS = [
  { sku: 'BOOK-1', quantity: 2, unitPriceCents: 1250 },
  { sku: 'PEN-7', quantity: 3, unitPriceCents: 199 },
];
const CREATE = `mutation($u: ID!, $input: CreateOrderInput!) {
  createOrder(userId: $u, input: $input) { id status totalCents currency items { sku quantity unitPriceCents } user { id } createdAt }
}`;
const UPDATE =
  'mutation($id: ID!, $s: OrderStatus!) { updateOrderStatus(id: $id, status: $s) { id status } }';

describe('orders over GraphQL', () => {
  let t: TestApp;
  let alice: CreatedUser;
  let bob: CreatedUser;
  let guest: CreatedUser;
  const admin: Credentials = { basic: [ADMIN_EMAIL, ADMIN_PASSWORD] };
  const as = (u: CreatedUser): Credentials => ({ bearer: u.token });

  beforeAll(async () => {
    t = await startApp();
    [alice, bob, guest] = await Promise.all([
      createUser(t.url),
      createUser(t.url),
      createUser(t.url, { role: 'GUEST' }),
    ]);
  });
  afterAll(async () => {
    await t?.close();
  });

  async function order(owner: CreatedUser, currency = 'EUR'): Promise<string> {
    const res = await gql(t.url, as(owner), CREATE, {
      u: owner.id,
      input: { items: ITEMS, currency },
    });
    expectNoErrors(res);
    return res.data.createOrder.id as string;
  }

  it('creates an order for oneself with a server-computed total, readable over REST too', async () => {
    const res = await gql(t.url, as(alice), CREATE, {
      u: alice.id,
      input: { items: ITEMS, currency: 'eur' },
    });
    expectNoErrors(res);
    const o = res.data.createOrder;
    expect(o).toMatchObject({
      status: 'PENDING',
      totalCents: 3097,
      currency: 'EUR',
      items: ITEMS,
      user: { id: alice.id },
    });
    const rest = await alice.client.get(`/api/v1/orders/${o.id}`);
    expect(rest.body.data).toMatchObject({
      id: o.id,
      total_cents: 3097,
      status: 'pending',
      created_at: o.createdAt,
    });
  });

  it('validates the input with BAD_USER_INPUT naming the member', async () => {
    const res = await gql(t.url, as(alice), CREATE, {
      u: alice.id,
      input: { items: [{ sku: 'A', quantity: 0, unitPriceCents: 1 }], currency: 'XXQ' },
    });
    expect(res.data?.createOrder ?? null).toBeNull();
    expect(res.errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT');
    const fields = (
      (res.errors?.[0]?.extensions as { details?: { field: string }[] })?.details ?? []
    ).map((d) => d.field);
    expect(fields).toEqual(expect.arrayContaining(['items.0.quantity', 'currency']));
  });

  it('refuses to create for another user (FORBIDDEN) and for a GUEST', async () => {
    const other = await gql(t.url, as(alice), CREATE, {
      u: bob.id,
      input: { items: ITEMS, currency: 'EUR' },
    });
    expect(other.errors?.[0]?.extensions?.code).toBe('FORBIDDEN');
    const g = await gql(t.url, as(guest), CREATE, {
      u: guest.id,
      input: { items: ITEMS, currency: 'EUR' },
    });
    expect(g.errors?.[0]?.extensions?.code).toBe('FORBIDDEN');
    const anyone = await gql(t.url, admin, CREATE, {
      u: bob.id,
      input: { items: ITEMS, currency: 'EUR' },
    });
    expectNoErrors(anyone);
  });

  it('refuses a GUEST by the declared floor (@auth requires USER): FORBIDDEN even for invalid input or unknown ids, nothing written', async () => {
    const id = await order(alice);
    const unknownUser = 'usr_01ARZ3NDEKTSV4RRFFQ69G5FAV';
    const unknownOrder = 'ord_01ARZ3NDEKTSV4RRFFQ69G5FAV';
    for (const [u, input] of [
      [guest.id, { items: ITEMS, currency: 'EUR' }],
      [guest.id, { items: [{ sku: 'A', quantity: 0, unitPriceCents: 1 }], currency: 'XXQ' }],
      [alice.id, { items: ITEMS, currency: 'EUR' }],
      [unknownUser, { items: ITEMS, currency: 'EUR' }],
    ] as const) {
      const res = await gql(t.url, as(guest), CREATE, { u, input });
      expect(res.data?.createOrder ?? null, u).toBeNull();
      expect(res.errors?.[0]?.extensions?.code, u).toBe('FORBIDDEN');
    }
    for (const target of [id, unknownOrder]) {
      const upd = await gql(t.url, as(guest), UPDATE, { id: target, s: 'CANCELLED' });
      expect(upd.data?.updateOrderStatus ?? null, target).toBeNull();
      expect(upd.errors?.[0]?.extensions?.code, target).toBe('FORBIDDEN');
      const read = await gql(t.url, as(guest), 'query($id: ID!) { order(id: $id) { id } }', {
        id: target,
      });
      expect(read.data?.order ?? null, target).toBeNull();
      expect(read.errors?.[0]?.extensions?.code, target).toBe('FORBIDDEN');
    }
    const listed = await gql(
      t.url,
      admin,
      'query($u: ID!) { user(id: $u) { orders { totalCount } } }',
      { u: guest.id },
    );
    expectNoErrors(listed);
    expect(listed.data.user.orders.totalCount).toBe(0);
    expect((await alice.client.get(`/api/v1/orders/${id}`)).body.data.status).toBe('pending');
  });

  it('reads order(id) as owner and ADMIN; another USER gets null + FORBIDDEN; unknown NOT_FOUND', async () => {
    const id = await order(alice);
    const q = 'query($id: ID!) { order(id: $id) { id status } }';
    expect((await gql(t.url, as(alice), q, { id })).data.order).toEqual({ id, status: 'PENDING' });
    expect((await gql(t.url, admin, q, { id })).data.order.id).toBe(id);
    const refused = await gql(t.url, as(bob), q, { id });
    expect(refused.data.order).toBeNull();
    expect(refused.errors?.[0]?.extensions?.code).toBe('FORBIDDEN');
    const unknown = await gql(t.url, admin, q, { id: 'ord_01ARZ3NDEKTSV4RRFFQ69G5FAV' });
    expect(unknown.errors?.[0]?.extensions?.code).toBe('NOT_FOUND');
  });

  it('resolves node(id) to an Order with the same read rules', async () => {
    const id = await order(alice);
    const q = 'query($id: ID!) { node(id: $id) { __typename id ... on Order { totalCents } } }';
    expect((await gql(t.url, as(alice), q, { id })).data.node).toEqual({
      __typename: 'Order',
      id,
      totalCents: 3097,
    });
    expect((await gql(t.url, as(bob), q, { id })).errors?.[0]?.extensions?.code).toBe('FORBIDDEN');
  });

  it('runs the state machine: ADMIN valid transitions, CONFLICT for invalid ones, USER may cancel own pending', async () => {
    const id = await order(alice);
    expect(
      (await gql(t.url, as(alice), UPDATE, { id, s: 'PAID' })).errors?.[0]?.extensions?.code,
    ).toBe('FORBIDDEN');
    expect((await gql(t.url, admin, UPDATE, { id, s: 'PAID' })).data.updateOrderStatus.status).toBe(
      'PAID',
    );
    expect(
      (await gql(t.url, admin, UPDATE, { id, s: 'PENDING' })).errors?.[0]?.extensions?.code,
    ).toBe('CONFLICT');
    expect(
      (await gql(t.url, admin, UPDATE, { id, s: 'SHIPPED' })).data.updateOrderStatus.status,
    ).toBe('SHIPPED');
    expect(
      (await gql(t.url, admin, UPDATE, { id, s: 'CANCELLED' })).errors?.[0]?.extensions?.code,
    ).toBe('CONFLICT');
    const mine = await order(alice);
    expect(
      (await gql(t.url, as(bob), UPDATE, { id: mine, s: 'CANCELLED' })).errors?.[0]?.extensions
        ?.code,
    ).toBe('FORBIDDEN');
    expect(
      (await gql(t.url, as(alice), UPDATE, { id: mine, s: 'CANCELLED' })).data.updateOrderStatus
        .status,
    ).toBe('CANCELLED');
    expect((await alice.client.get(`/api/v1/orders/${mine}`)).body.data.status).toBe('cancelled');
  });

  describe('User.orders(first, after, status)', () => {
    let carol: CreatedUser;
    const ids: string[] = [];
    beforeAll(async () => {
      carol = await createUser(t.url);
      for (let i = 0; i < 5; i++) {
        ids.push(await order(carol));
      }
      await gql(t.url, admin, UPDATE, { id: ids[1], s: 'PAID' });
      await gql(t.url, admin, UPDATE, { id: ids[4], s: 'PAID' });
    });
    const Q = `query($id: ID!, $first: Int, $after: String, $status: OrderStatus) {
      user(id: $id) { name orders(first: $first, after: $after, status: $status) {
        totalCount edges { cursor node { id status } } pageInfo { hasNextPage endCursor }
      } }
    }`;

    it('pages oldest first with cursors', async () => {
      const p1 = await gql(t.url, as(carol), Q, { id: carol.id, first: 2 });
      expectNoErrors(p1);
      const c1 = p1.data.user.orders;
      expect(c1.totalCount).toBe(5);
      expect(c1.edges.map((e: { node: { id: string } }) => e.node.id)).toEqual(ids.slice(0, 2));
      expect(c1.pageInfo.hasNextPage).toBe(true);
      const p2 = await gql(t.url, as(carol), Q, {
        id: carol.id,
        first: 2,
        after: c1.pageInfo.endCursor,
      });
      expect(p2.data.user.orders.edges.map((e: { node: { id: string } }) => e.node.id)).toEqual(
        ids.slice(2, 4),
      );
      const p3 = await gql(t.url, as(carol), Q, {
        id: carol.id,
        first: 2,
        after: p2.data.user.orders.pageInfo.endCursor,
      });
      expect(p3.data.user.orders.edges.map((e: { node: { id: string } }) => e.node.id)).toEqual(
        ids.slice(4),
      );
      expect(p3.data.user.orders.pageInfo.hasNextPage).toBe(false);
    });

    it('filters by status', async () => {
      const res = await gql(t.url, admin, Q, { id: carol.id, status: 'PAID' });
      expect(res.data.user.orders.totalCount).toBe(2);
      expect(res.data.user.orders.edges.map((e: { node: { id: string } }) => e.node.id)).toEqual([
        ids[1],
        ids[4],
      ]);
    });

    it('pages a status filter with a cursor (status and position bound together)', async () => {
      const p1 = await gql(t.url, admin, Q, { id: carol.id, status: 'PAID', first: 1 });
      expectNoErrors(p1);
      expect(p1.data.user.orders.edges.map((e: { node: { id: string } }) => e.node.id)).toEqual([
        ids[1],
      ]);
      const p2 = await gql(t.url, admin, Q, {
        id: carol.id,
        status: 'PAID',
        first: 1,
        after: p1.data.user.orders.pageInfo.endCursor,
      });
      expectNoErrors(p2);
      expect(p2.data.user.orders.edges.map((e: { node: { id: string } }) => e.node.id)).toEqual([
        ids[4],
      ]);
      expect(p2.data.user.orders.pageInfo.hasNextPage).toBe(false);
    });

    it('nulls the field with FORBIDDEN for another USER, keeping the rest of the data', async () => {
      const res = await gql(t.url, as(bob), Q, { id: carol.id });
      expect(res.data.user.name).toBe(carol.body.name);
      expect(res.data.user.orders).toBeNull();
      expect(res.errors?.[0]?.extensions?.code).toBe('FORBIDDEN');
      expect(res.errors?.[0]).toMatchObject({ path: ['user', 'orders'] });
    });

    it('rejects a bad cursor and a first over 100 with BAD_USER_INPUT', async () => {
      expect(
        (await gql(t.url, as(carol), Q, { id: carol.id, after: 'garbage' })).errors?.[0]?.extensions
          ?.code,
      ).toBe('BAD_USER_INPUT');
      expect(
        (await gql(t.url, as(carol), Q, { id: carol.id, first: 101 })).errors?.[0]?.extensions
          ?.code,
      ).toBe('BAD_USER_INPUT');
    });
  });

  it('batches User.orders: the statement count does not grow with the number of users', async () => {
    for (const u of [alice, bob]) {
      await order(u);
    }
    for (let i = 0; i < 6; i++) {
      await order(await createUser(t.url));
    }
    const db = t.app.get(DatabaseService);
    const original = db.query.bind(db);
    let statements = 0;
    db.query = (sql: string, params?: unknown[]) => {
      statements += 1;
      return original(sql, params);
    };
    const count = async (first: number) => {
      statements = 0;
      const res = await gql(
        t.url,
        admin,
        `query { users(first: ${first}) { nodes { id orders(first: 3) { totalCount nodes { id user { id } } } } } }`,
      );
      expectNoErrors(res);
      expect(res.data.users.nodes).toHaveLength(first);
      return statements;
    };
    // the fewest of three runs each: work of the app's own in the background (the webhook engine
    // fanning out the events of the orders just made) may add statements to a run, never remove any
    const fewest = async (first: number) =>
      Math.min(await count(first), await count(first), await count(first));
    try {
      const small = await fewest(2);
      const large = await fewest(8);
      expect(large).toBe(small);
    } finally {
      db.query = original;
    }
  });
});
