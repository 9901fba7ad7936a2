import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApp, type TestApp } from './helpers/app.js';
import { adminClient, createUser, type CreatedUser } from './helpers/factories.js';
import { client, type Client } from './helpers/http.js';

const STATUSES = ['pending', 'paid', 'shipped', 'delivered', 'cancelled'] as const;
type Status = (typeof STATUSES)[number];
/** The state machine of docs/contract.md section 4, written out independently of the implementation. */
const VALID = new Set([
  'pending>paid',
  'paid>shipped',
  'shipped>delivered',
  'pending>cancelled',
  'paid>cancelled',
]);
/** How an ADMIN walks an order to each status. */
const PATH_TO: Record<Status, Status[]> = {
  pending: [],
  paid: ['paid'],
  shipped: ['paid', 'shipped'],
  delivered: ['paid', 'shipped', 'delivered'],
  cancelled: ['cancelled'],
};

const ITEMS = [
  { sku: 'BOOK-1', quantity: 2, unit_price_cents: 1250 },
  { sku: 'PEN-7', quantity: 3, unit_price_cents: 199 },
];

describe('orders', () => {
  let t: TestApp;
  let admin: Client;
  let alice: CreatedUser;
  let bob: CreatedUser;
  let guest: CreatedUser;

  beforeAll(async () => {
    t = await startApp();
    admin = await adminClient(t.url);
    [alice, bob, guest] = await Promise.all([
      createUser(t.url),
      createUser(t.url),
      createUser(t.url, { role: 'GUEST' }),
    ]);
  });
  afterAll(async () => {
    await t?.close();
  });

  async function newOrder(
    owner: CreatedUser,
    as: Client = owner.client,
    body: object = { items: ITEMS, currency: 'EUR' },
  ) {
    const res = await as.post(`/api/v1/users/${owner.id}/orders`, body);
    expect(res.status, res.text).toBe(201);
    return res.body.data as { id: string; status: Status; updated_at: string };
  }

  async function orderIn(status: Status, owner: CreatedUser = alice): Promise<string> {
    const order = await newOrder(owner);
    for (const step of PATH_TO[status]) {
      const res = await admin.patch(`/api/v1/orders/${order.id}`, { status: step });
      expect(res.status, res.text).toBe(200);
    }
    return order.id;
  }

  describe('POST /users/{id}/orders', () => {
    it('creates a pending order with a server-computed total, 201 + Location', async () => {
      const res = await alice.client.post(`/api/v1/users/${alice.id}/orders`, {
        items: ITEMS,
        currency: 'EUR',
      });
      expect(res.status).toBe(201);
      const order = res.body.data;
      expect(order).toMatchObject({
        user_id: alice.id,
        status: 'pending',
        items: ITEMS,
        total_cents: 2 * 1250 + 3 * 199,
        currency: 'EUR',
      });
      expect(order.id).toMatch(/^ord_[0-9A-HJKMNP-TV-Z]{26}$/);
      expect(order.created_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
      expect(order.updated_at).toBe(order.created_at);
      expect(res.headers.get('location')).toBe(`http://atrium.test/api/v1/orders/${order.id}`);
      // what is stored is what was returned
      const stored = await alice.client.get(`/api/v1/orders/${order.id}`);
      expect(stored.status).toBe(200);
      expect(stored.body.data).toEqual(order);
    });

    it('normalizes the currency code to upper case', async () => {
      const res = await alice.client.post(`/api/v1/users/${alice.id}/orders`, {
        items: ITEMS,
        currency: 'usd',
      });
      expect(res.status).toBe(201);
      expect(res.body.data.currency).toBe('USD');
    });

    it.each([
      ['no items', { items: [], currency: 'EUR' }, 'items'],
      ['missing items', { currency: 'EUR' }, 'items'],
      [
        'quantity 0',
        { items: [{ sku: 'A', quantity: 0, unit_price_cents: 1 }], currency: 'EUR' },
        'items.0.quantity',
      ],
      [
        'fractional quantity',
        { items: [{ sku: 'A', quantity: 1.5, unit_price_cents: 1 }], currency: 'EUR' },
        'items.0.quantity',
      ],
      [
        'negative price',
        { items: [{ sku: 'A', quantity: 1, unit_price_cents: -1 }], currency: 'EUR' },
        'items.0.unit_price_cents',
      ],
      [
        'empty sku',
        { items: [{ sku: '', quantity: 1, unit_price_cents: 1 }], currency: 'EUR' },
        'items.0.sku',
      ],
      [
        'unknown item member',
        { items: [{ sku: 'A', quantity: 1, unit_price_cents: 1, color: 'red' }], currency: 'EUR' },
        'items.0.color',
      ],
      ['unknown currency', { items: ITEMS, currency: 'ABC' }, 'currency'],
      ['two-letter currency', { items: ITEMS, currency: 'EU' }, 'currency'],
      ['missing currency', { items: ITEMS }, 'currency'],
      ['client-sent total', { items: ITEMS, currency: 'EUR', total_cents: 1 }, 'total_cents'],
      ['client-sent status', { items: ITEMS, currency: 'EUR', status: 'paid' }, 'status'],
    ])('refuses %s with 422 naming the member', async (_, body, field) => {
      const res = await alice.client.post(`/api/v1/users/${alice.id}/orders`, body);
      expect(res.status, res.text).toBe(422);
      expect(res.body.error.code).toBe('validation_failed');
      expect(res.body.error.details.map((d: { field: string }) => d.field)).toContain(field);
    });

    it('refuses more than 100 items', async () => {
      const items = Array.from({ length: 101 }, (_, i) => ({
        sku: `S${i}`,
        quantity: 1,
        unit_price_cents: 1,
      }));
      const res = await alice.client.post(`/api/v1/users/${alice.id}/orders`, {
        items,
        currency: 'EUR',
      });
      expect(res.status).toBe(422);
    });

    it('lets an ADMIN create an order for any user', async () => {
      const res = await admin.post(`/api/v1/users/${bob.id}/orders`, {
        items: ITEMS,
        currency: 'GBP',
      });
      expect(res.status).toBe(201);
      expect(res.body.data.user_id).toBe(bob.id);
    });

    it('refuses a USER creating an order for someone else (403), and writes nothing', async () => {
      const before = await admin.get(`/api/v1/users/${bob.id}/orders`);
      const res = await alice.client.post(`/api/v1/users/${bob.id}/orders`, {
        items: ITEMS,
        currency: 'EUR',
      });
      expect(res.status).toBe(403);
      expect(res.body.error.code).toBe('forbidden');
      const after = await admin.get(`/api/v1/users/${bob.id}/orders`);
      expect(after.body.meta.total).toBe(before.body.meta.total);
    });

    it('refuses a GUEST, even for themself (403)', async () => {
      const res = await guest.client.post(`/api/v1/users/${guest.id}/orders`, {
        items: ITEMS,
        currency: 'EUR',
      });
      expect(res.status).toBe(403);
    });

    it('refuses a GUEST at the route (the declared floor is USER): 403 even for an invalid body or an unknown user, nothing written', async () => {
      const unknown = 'usr_01ARZ3NDEKTSV4RRFFQ69G5FAV';
      const before = (await admin.get(`/api/v1/users/${guest.id}/orders`)).body.meta.total;
      for (const [userId, body] of [
        [guest.id, { items: ITEMS, currency: 'EUR' }],
        [guest.id, { items: [], currency: 'EUR' }],
        [guest.id, { items: ITEMS, currency: 'XXQ' }],
        [guest.id, {}],
        [alice.id, { items: ITEMS, currency: 'EUR' }],
        [unknown, { items: ITEMS, currency: 'EUR' }],
      ] as const) {
        const res = await guest.client.post(`/api/v1/users/${userId}/orders`, body);
        expect(res.status, `${userId} ${JSON.stringify(body)}`).toBe(403);
        expect(res.body).toEqual({ error: { code: 'forbidden', message: expect.any(String) } });
        expect(res.headers.get('location')).toBeNull();
      }
      expect((await admin.get(`/api/v1/users/${guest.id}/orders`)).body.meta.total).toBe(before);
    });

    it('answers 404 for an unknown or malformed user id', async () => {
      for (const id of [
        'usr_01ARZ3NDEKTSV4RRFFQ69G5FAV',
        'nope',
        'ord_01ARZ3NDEKTSV4RRFFQ69G5FAV',
      ]) {
        const res = await admin.post(`/api/v1/users/${id}/orders`, {
          items: ITEMS,
          currency: 'EUR',
        });
        expect(res.status).toBe(404);
      }
    });

    it('answers 401 without credentials', async () => {
      const res = await client(t.url).post(`/api/v1/users/${alice.id}/orders`, {
        items: ITEMS,
        currency: 'EUR',
      });
      expect(res.status).toBe(401);
    });
  });

  describe('GET /orders/{id}', () => {
    let orderId: string;
    beforeAll(async () => {
      orderId = (await newOrder(alice)).id;
    });

    it('shows the owner their order and an ADMIN any order', async () => {
      expect((await alice.client.get(`/api/v1/orders/${orderId}`)).status).toBe(200);
      const res = await admin.get(`/api/v1/orders/${orderId}`);
      expect(res.status).toBe(200);
      expect(res.body.data.id).toBe(orderId);
      expect(res.headers.get('etag')).toMatch(/^"/);
    });

    it('refuses another USER and a GUEST (403)', async () => {
      expect((await bob.client.get(`/api/v1/orders/${orderId}`)).status).toBe(403);
      expect((await guest.client.get(`/api/v1/orders/${orderId}`)).status).toBe(403);
    });

    it('answers 404 for unknown and malformed ids', async () => {
      expect((await admin.get('/api/v1/orders/ord_01ARZ3NDEKTSV4RRFFQ69G5FAV')).status).toBe(404);
      expect((await admin.get('/api/v1/orders/usr_01ARZ3NDEKTSV4RRFFQ69G5FAV')).status).toBe(404);
      expect((await admin.get('/api/v1/orders/42')).status).toBe(404);
    });

    it('answers 304 when If-None-Match matches', async () => {
      const first = await alice.client.get(`/api/v1/orders/${orderId}`);
      const etag = first.headers.get('etag')!;
      const again = await alice.client.get(`/api/v1/orders/${orderId}`, {
        headers: { 'if-none-match': etag },
      });
      expect(again.status).toBe(304);
      expect(again.text).toBe('');
    });
  });

  describe('GET /users/{id}/orders', () => {
    let carol: CreatedUser;
    const created: { id: string; status: Status }[] = [];
    beforeAll(async () => {
      carol = await createUser(t.url);
      for (let i = 0; i < 5; i++) {
        created.push(await newOrder(carol));
      }
      await admin.patch(`/api/v1/orders/${created[1].id}`, { status: 'paid' });
      await admin.patch(`/api/v1/orders/${created[3].id}`, { status: 'paid' });
      await admin.patch(`/api/v1/orders/${created[4].id}`, { status: 'cancelled' });
    });

    it("lists the user's orders oldest first with meta and Link", async () => {
      const res = await carol.client.get(`/api/v1/users/${carol.id}/orders?limit=2`);
      expect(res.status).toBe(200);
      expect(res.body.meta).toEqual({ page: 1, limit: 2, total: 5 });
      expect(res.body.data.map((o: { id: string }) => o.id)).toEqual([
        created[0].id,
        created[1].id,
      ]);
      const link = res.headers.get('link')!;
      expect(link).toContain(
        `<http://atrium.test/api/v1/users/${carol.id}/orders?limit=2&page=2&cursor=`,
      );
      expect(link).toMatch(/&cursor=[\w-]+>; rel="next"/);
      expect(link).toContain('page=3>; rel="last"');
      expect(link).toContain('page=1>; rel="first"');
      expect(link).not.toContain('rel="prev"');
    });

    it('pages, and a page past the end is empty', async () => {
      const page3 = await carol.client.get(`/api/v1/users/${carol.id}/orders?limit=2&page=3`);
      expect(page3.body.data.map((o: { id: string }) => o.id)).toEqual([created[4].id]);
      expect(page3.headers.get('link')).toContain('rel="prev"');
      expect(page3.headers.get('link')).not.toContain('rel="next"');
      const past = await carol.client.get(`/api/v1/users/${carol.id}/orders?limit=2&page=9`);
      expect(past.status).toBe(200);
      expect(past.body.data).toEqual([]);
      expect(past.body.meta.total).toBe(5);
    });

    it('sorts by -created_at', async () => {
      const res = await carol.client.get(`/api/v1/users/${carol.id}/orders?sort=-created_at`);
      expect(res.body.data.map((o: { id: string }) => o.id)).toEqual(
        created.map((o) => o.id).reverse(),
      );
    });

    it('filters by status', async () => {
      const paid = await carol.client.get(`/api/v1/users/${carol.id}/orders?status=paid`);
      expect(paid.body.meta.total).toBe(2);
      expect(paid.body.data.map((o: { id: string }) => o.id)).toEqual([
        created[1].id,
        created[3].id,
      ]);
      expect(paid.body.data.every((o: { status: string }) => o.status === 'paid')).toBe(true);
      const shipped = await carol.client.get(`/api/v1/users/${carol.id}/orders?status=shipped`);
      expect(shipped.body).toMatchObject({ data: [], meta: { total: 0 } });
    });

    it.each([
      ['limit=0', 'limit'],
      ['limit=101', 'limit'],
      ['page=abc', 'page'],
      ['sort=total_cents', 'sort'],
      ['sort=name', 'sort'],
      ['status=lost', 'status'],
    ])('answers 400 for %s naming the parameter', async (query, field) => {
      const res = await carol.client.get(`/api/v1/users/${carol.id}/orders?${query}`);
      expect(res.status).toBe(400);
      expect(res.body.error.details[0].field).toBe(field);
    });

    it('carries an ETag and answers 304 to If-None-Match', async () => {
      const res = await carol.client.get(`/api/v1/users/${carol.id}/orders`);
      const etag = res.headers.get('etag')!;
      expect(etag).toMatch(/^"/);
      const again = await carol.client.get(`/api/v1/users/${carol.id}/orders`, {
        headers: { 'if-none-match': etag },
      });
      expect(again.status).toBe(304);
      // a change to one order changes the list's ETag
      await carol.client.patch(`/api/v1/orders/${created[0].id}`, { status: 'cancelled' });
      const changed = await carol.client.get(`/api/v1/users/${carol.id}/orders`, {
        headers: { 'if-none-match': etag },
      });
      expect(changed.status).toBe(200);
    });

    it("lets an ADMIN list anyone's orders", async () => {
      const res = await admin.get(`/api/v1/users/${carol.id}/orders`);
      expect(res.status).toBe(200);
      expect(res.body.meta.total).toBe(5);
    });

    it('refuses another USER and a GUEST (403)', async () => {
      expect((await alice.client.get(`/api/v1/users/${carol.id}/orders`)).status).toBe(403);
      expect((await guest.client.get(`/api/v1/users/${carol.id}/orders`)).status).toBe(403);
      expect((await guest.client.get(`/api/v1/users/${guest.id}/orders`)).status).toBe(403);
    });

    it('answers 404 for an unknown user and 401 without credentials', async () => {
      expect((await admin.get('/api/v1/users/usr_01ARZ3NDEKTSV4RRFFQ69G5FAV/orders')).status).toBe(
        404,
      );
      expect((await client(t.url).get(`/api/v1/users/${carol.id}/orders`)).status).toBe(401);
    });

    it('hides the orders of a deleted user (404)', async () => {
      const dave = await createUser(t.url);
      const orderId = (await newOrder(dave)).id;
      expect((await admin.delete(`/api/v1/users/${dave.id}`)).status).toBe(204);
      expect((await admin.get(`/api/v1/users/${dave.id}/orders`)).status).toBe(404);
      expect((await admin.get(`/api/v1/orders/${orderId}`)).status).toBe(404);
      expect((await admin.patch(`/api/v1/orders/${orderId}`, { status: 'paid' })).status).toBe(404);
    });
  });

  describe('PATCH /orders/{id}: every transition as ADMIN', () => {
    for (const from of STATUSES) {
      for (const to of STATUSES) {
        const valid = VALID.has(`${from}>${to}`);
        it(`${from} -> ${to}: ${valid ? '200' : '409'}`, async () => {
          const id = await orderIn(from);
          const before = (await admin.get(`/api/v1/orders/${id}`)).body.data;
          const res = await admin.patch(`/api/v1/orders/${id}`, { status: to });
          expect(res.status, res.text).toBe(valid ? 200 : 409);
          const stored = (await admin.get(`/api/v1/orders/${id}`)).body.data;
          if (valid) {
            expect(res.body.data.status).toBe(to);
            expect(res.body.data.updated_at > before.updated_at).toBe(true);
            expect(stored).toEqual(res.body.data);
          } else {
            expect(res.body.error.code).toBe('conflict');
            expect(stored).toEqual(before);
          }
        });
      }
    }
  });

  describe('PATCH /orders/{id}: who may change a status', () => {
    it('lets a USER cancel their own pending order', async () => {
      const id = await orderIn('pending');
      const res = await alice.client.patch(`/api/v1/orders/${id}`, { status: 'cancelled' });
      expect(res.status).toBe(200);
      expect(res.body.data.status).toBe('cancelled');
    });

    it.each([
      ['pending', 'paid'],
      ['paid', 'cancelled'],
      ['paid', 'shipped'],
      ['shipped', 'delivered'],
    ] as const)(
      'refuses a USER moving their own order %s -> %s (403), unchanged',
      async (from, to) => {
        const id = await orderIn(from);
        const res = await alice.client.patch(`/api/v1/orders/${id}`, { status: to });
        expect(res.status).toBe(403);
        expect((await admin.get(`/api/v1/orders/${id}`)).body.data.status).toBe(from);
      },
    );

    it('answers 409 to a USER asking for an invalid transition', async () => {
      const id = await orderIn('delivered');
      expect(
        (await alice.client.patch(`/api/v1/orders/${id}`, { status: 'cancelled' })).status,
      ).toBe(409);
    });

    it("refuses a USER cancelling someone else's pending order (403)", async () => {
      const id = await orderIn('pending', bob);
      expect(
        (await alice.client.patch(`/api/v1/orders/${id}`, { status: 'cancelled' })).status,
      ).toBe(403);
      expect((await admin.get(`/api/v1/orders/${id}`)).body.data.status).toBe('pending');
    });

    it('refuses a GUEST (403)', async () => {
      const id = await orderIn('pending');
      expect(
        (await guest.client.patch(`/api/v1/orders/${id}`, { status: 'cancelled' })).status,
      ).toBe(403);
    });

    it('refuses a GUEST at the route (the declared floor is USER): 403 for reads and status changes, even for an invalid body or an unknown order, nothing changed', async () => {
      const id = await orderIn('pending');
      const unknownOrder = 'ord_01ARZ3NDEKTSV4RRFFQ69G5FAV';
      const unknownUser = 'usr_01ARZ3NDEKTSV4RRFFQ69G5FAV';
      const attempts: [string, () => Promise<{ status: number; body: unknown }>][] = [];
      for (const target of [id, unknownOrder]) {
        for (const body of [{ status: 'cancelled' }, { status: 'lost' }, {}]) {
          attempts.push([
            `PATCH ${target} ${JSON.stringify(body)}`,
            () => guest.client.patch(`/api/v1/orders/${target}`, body),
          ]);
        }
        attempts.push([`GET ${target}`, () => guest.client.get(`/api/v1/orders/${target}`)]);
      }
      for (const userId of [guest.id, unknownUser]) {
        attempts.push([
          `GET orders of ${userId}`,
          () => guest.client.get(`/api/v1/users/${userId}/orders`),
        ]);
      }
      for (const [label, send] of attempts) {
        const res = await send();
        expect(res.status, label).toBe(403);
        expect(res.body, label).toEqual({
          error: { code: 'forbidden', message: expect.any(String) },
        });
      }
      expect((await admin.get(`/api/v1/orders/${id}`)).body.data.status).toBe('pending');
    });

    it('answers 404 for an unknown order and 401 without credentials', async () => {
      expect(
        (await admin.patch('/api/v1/orders/ord_01ARZ3NDEKTSV4RRFFQ69G5FAV', { status: 'paid' }))
          .status,
      ).toBe(404);
      const id = await orderIn('pending');
      expect((await client(t.url).patch(`/api/v1/orders/${id}`, { status: 'paid' })).status).toBe(
        401,
      );
    });

    it.each([
      [{ status: 'lost' }, 'status'],
      [{}, 'status'],
      [{ status: 'paid', total_cents: 5 }, 'total_cents'],
    ])('refuses the body %j with 422', async (body, field) => {
      const id = await orderIn('pending');
      const res = await admin.patch(`/api/v1/orders/${id}`, body);
      expect(res.status).toBe(422);
      expect(res.body.error.details.map((d: { field: string }) => d.field)).toContain(field);
    });

    it('accepts application/merge-patch+json', async () => {
      const id = await orderIn('pending');
      const res = await admin.patch(`/api/v1/orders/${id}`, undefined, {
        rawBody: JSON.stringify({ status: 'paid' }),
        headers: { 'content-type': 'application/merge-patch+json' },
      });
      expect(res.status).toBe(200);
      expect(res.body.data.status).toBe('paid');
    });

    it('honours If-Match: 412 when stale, 200 when current', async () => {
      const id = await orderIn('pending');
      const etag = (await admin.get(`/api/v1/orders/${id}`)).headers.get('etag')!;
      const stale = await admin.patch(
        `/api/v1/orders/${id}`,
        { status: 'paid' },
        { headers: { 'if-match': '"nope"' } },
      );
      expect(stale.status).toBe(412);
      expect((await admin.get(`/api/v1/orders/${id}`)).body.data.status).toBe('pending');
      const ok = await admin.patch(
        `/api/v1/orders/${id}`,
        { status: 'paid' },
        { headers: { 'if-match': etag } },
      );
      expect(ok.status).toBe(200);
    });
  });
});
