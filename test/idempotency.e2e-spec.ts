import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { DatabaseService } from '../src/database/database.service.js';
import { startApp, usingPostgres, type TestApp } from './helpers/app.js';
import { createApiKey, createUser, unique, type CreatedUser } from './helpers/factories.js';
import { client, request, type Credentials, type TestResponse } from './helpers/http.js';

/** Idempotency-Key on creating POSTs (docs/idempotency.md). */

async function postsTitled(t: TestApp, title: string): Promise<number> {
  const db = t.app.get(DatabaseService);
  const [row] = await db.query<{ n: number | string }>(
    `SELECT COUNT(*) AS n FROM posts WHERE title = ${db.p(1)}`,
    [title],
  );
  return Number(row?.n ?? 0);
}

function createPost(
  t: TestApp,
  user: CreatedUser,
  key: string | undefined,
  body: unknown,
): Promise<TestResponse> {
  return request(t.url, '/api/v1/posts', {
    method: 'POST',
    auth: { bearer: user.token },
    headers: key === undefined ? {} : { 'idempotency-key': key },
    body,
  });
}

function replayed(res: TestResponse): boolean {
  return res.headers.get('idempotent-replayed') === 'true';
}

describe('Idempotency-Key', () => {
  let t: TestApp;
  let alice: CreatedUser;
  let bob: CreatedUser;

  beforeAll(async () => {
    t = await startApp();
    alice = await createUser(t.url);
    bob = await createUser(t.url);
  });
  afterAll(() => t?.close());

  it('replays the first response (status, body, Location, ETag) for the same key and body, and creates once', async () => {
    const key = randomUUID();
    const title = unique('idem-');
    const first = await createPost(t, alice, key, { title, body: 'once' });
    expect(first.status).toBe(201);
    expect(replayed(first)).toBe(false);
    // the same members in another order are the same request
    const again = await createPost(t, alice, key, { body: 'once', title });
    expect(again.status).toBe(201);
    expect(replayed(again)).toBe(true);
    expect(again.text).toBe(first.text);
    expect(again.headers.get('location')).toBe(first.headers.get('location'));
    expect(again.headers.get('etag')).toBe(first.headers.get('etag'));
    expect(again.headers.get('content-type')).toBe(first.headers.get('content-type'));
    expect(await postsTitled(t, title)).toBe(1);
    // a browser client may read the replay marker
    const fromBrowser = await request(t.url, '/api/v1/posts', {
      method: 'POST',
      auth: { bearer: alice.token },
      headers: { 'idempotency-key': key, origin: 'http://localhost:5173' },
      body: { title, body: 'once' },
    });
    expect(replayed(fromBrowser)).toBe(true);
    expect(fromBrowser.headers.get('access-control-expose-headers')).toMatch(
      /(^|,\s*)Idempotent-Replayed(,|$)/i,
    );
    // without a key, every POST creates
    await createPost(t, alice, undefined, { title, body: 'once' });
    expect(await postsTitled(t, title)).toBe(2);
  });

  it('answers 422 idempotency_key_reused for the same key with another body, creating nothing', async () => {
    const key = randomUUID();
    const title = unique('idem-');
    expect((await createPost(t, alice, key, { title, body: 'first' })).status).toBe(201);
    const other = await createPost(t, alice, key, { title, body: 'second' });
    expect(other.status).toBe(422);
    expect(other.body.error.code).toBe('idempotency_key_reused');
    expect(replayed(other)).toBe(false);
    expect(await postsTitled(t, title)).toBe(1);
  });

  it('keeps keys per caller: another user with the same key and body runs its own request', async () => {
    const key = randomUUID();
    const title = unique('idem-');
    const a = await createPost(t, alice, key, { title, body: 'x' });
    const b = await createPost(t, bob, key, { title, body: 'x' });
    expect([a.status, b.status]).toEqual([201, 201]);
    expect(replayed(b)).toBe(false);
    expect(b.body.data.id).not.toBe(a.body.data.id);
    expect(b.body.data.author_id ?? b.body.data.author?.id).not.toBe(
      a.body.data.author_id ?? a.body.data.author?.id,
    );
    expect(await postsTitled(t, title)).toBe(2);
  });

  it('scopes a key by path: the same key on another creating route is another key', async () => {
    const key = randomUUID();
    const post = await createPost(t, alice, key, { title: unique('idem-'), body: 'x' });
    const room = await request(t.url, '/api/v1/rooms', {
      method: 'POST',
      auth: { bearer: alice.token },
      headers: { 'idempotency-key': key },
      body: { name: unique('room-') },
    });
    expect([post.status, room.status]).toEqual([201, 201]);
    expect(replayed(room)).toBe(false);
  });

  it('replays a 4xx the first request got (the order of a missing user stays 404)', async () => {
    const key = randomUUID();
    const admin = await createUser(t.url, { role: 'ADMIN' });
    const path = '/api/v1/users/usr_doesnotexist000000000/orders';
    const send = () =>
      request(t.url, path, {
        method: 'POST',
        auth: { bearer: admin.token },
        headers: { 'idempotency-key': key },
        body: { items: [{ sku: 'A-1', qty: 1, price_cents: 100 }] },
      });
    const first = await send();
    expect(first.status).toBeGreaterThanOrEqual(400);
    expect(first.status).toBeLessThan(500);
    const again = await send();
    expect(again.status).toBe(first.status);
    expect(again.text).toBe(first.text);
    expect(replayed(again)).toBe(true);
  });

  it('refuses a malformed key with 400 before running anything', async () => {
    const title = unique('idem-');
    for (const key of ['x'.repeat(256), 'has space', 'caf\u00e9']) {
      const res = await request(t.url, '/api/v1/posts', {
        method: 'POST',
        auth: { bearer: alice.token },
        headers: { 'idempotency-key': key },
        body: { title, body: 'x' },
      });
      expect(res.status, key).toBe(400);
      expect(res.body.error.code).toBe('bad_request');
      expect(res.body.error.details[0].field).toBe('Idempotency-Key');
    }
    expect(await postsTitled(t, title)).toBe(0);
    const longest = await createPost(t, alice, 'k'.repeat(255), { title, body: 'x' });
    expect(longest.status).toBe(201);
  });

  it('runs a key once under 20 concurrent requests: one creates, the rest replay or get 409 idempotency_key_in_progress', async () => {
    const key = randomUUID();
    const title = unique('idem-');
    const answers = await Promise.all(
      Array.from({ length: 20 }, () => createPost(t, alice, key, { title, body: 'race' })),
    );
    const created = answers.filter((r) => r.status === 201 && !replayed(r));
    expect(created).toHaveLength(1);
    for (const r of answers) {
      if (r.status === 409) {
        expect(r.body.error.code).toBe('idempotency_key_in_progress');
        expect(r.headers.get('retry-after')).toBe('1');
      } else {
        expect(r.status).toBe(201);
        expect(r.body.data.id).toBe(created[0].body.data.id);
      }
    }
    expect(await postsTitled(t, title)).toBe(1);
  });

  it('honours the key on an anonymous creating POST (register), scoped by address', async () => {
    const key = randomUUID();
    const body = { name: 'Idem', email: `${unique()}@example.com`, password: 'a-long-password-1' };
    const send = () =>
      request(t.url, '/api/v1/auth/register', {
        method: 'POST',
        headers: { 'idempotency-key': key },
        body,
      });
    const first = await send();
    expect(first.status).toBe(201);
    const again = await send();
    expect(again.status).toBe(201);
    expect(replayed(again)).toBe(true);
    expect(again.body.data.id).toBe(first.body.data.id);
  });

  it('documents the Idempotency-Key header on the creating POSTs in OpenAPI', async () => {
    const doc = await request(t.url, '/api/docs-json');
    const paramsOf = (path: string) =>
      ((doc.body.paths[path]?.post?.parameters ?? []) as { name: string; in: string }[])
        .filter((p) => p.in === 'header')
        .map((p) => p.name);
    for (const path of ['/api/v1/posts', '/api/v1/users', '/api/v1/rooms']) {
      expect(paramsOf(path), path).toContain('Idempotency-Key');
    }
  });
});

/** A replay is served only to a caller who could make the request now. */
describe("Idempotency-Key replays and the caller's current rights", () => {
  let t: TestApp;
  let admin: CreatedUser;
  let yves: CreatedUser;
  const ORDER = { currency: 'EUR', items: [{ sku: 'IDEM-1', quantity: 2, unit_price_cents: 150 }] };

  beforeAll(async () => {
    t = await startApp();
    yves = await createUser(t.url);
  });
  beforeEach(async () => {
    admin = await createUser(t.url, { role: 'ADMIN' });
  });
  afterAll(() => t?.close());

  async function ordersOf(userId: string): Promise<number> {
    const db = t.app.get(DatabaseService);
    const [row] = await db.query<{ n: number | string }>(
      `SELECT COUNT(*) AS n FROM orders WHERE user_id = ${db.p(1)}`,
      [userId],
    );
    return Number(row?.n ?? 0);
  }

  function placeOrder(auth: Credentials, userId: string, key: string, path?: string) {
    return request(t.url, path ?? `/api/v1/users/${userId}/orders`, {
      method: 'POST',
      auth,
      headers: { 'idempotency-key': key },
      body: ORDER,
    });
  }

  it('a GUEST key of the same user does not get the order an ADMIN placed for another user: 403 as a fresh request, nothing created', async () => {
    const key = randomUUID();
    const before = await ordersOf(yves.id);
    const first = await placeOrder({ bearer: admin.token }, yves.id, key);
    expect(first.status).toBe(201);
    const orderId = first.body.data.id as string;
    const guestKey = await createApiKey(admin.client, { role: 'GUEST' });
    // a direct read is refused to that key...
    const direct = await client(t.url, { apiKey: guestKey.key }).get(`/api/v1/orders/${orderId}`);
    expect([403, 404]).toContain(direct.status);
    // ...and so is the replay: the answer a fresh request gets, without the stored body
    const replay = await placeOrder({ apiKey: guestKey.key }, yves.id, key);
    expect(replay.status).toBe(403);
    expect(replay.body.error.code).toBe('forbidden');
    expect(replayed(replay)).toBe(false);
    expect(replay.text).not.toContain(orderId);
    expect(replay.headers.get('location')).toBeNull();
    expect(await ordersOf(yves.id)).toBe(before + 1);
    // the same rights (the ADMIN's password) still get the replay
    const again = await placeOrder({ basic: [admin.email, admin.password] }, yves.id, key);
    expect(again.status).toBe(201);
    expect(replayed(again)).toBe(true);
    expect(again.text).toBe(first.text);
    expect(await ordersOf(yves.id)).toBe(before + 1);
  });

  it('a demoted caller: refused where a fresh request is (403), replayed where it would still succeed, and the check creates nothing', async () => {
    const forOther = randomUUID();
    const forSelf = randomUUID();
    const before = await ordersOf(yves.id);
    expect((await placeOrder({ bearer: admin.token }, yves.id, forOther)).status).toBe(201);
    const own = await placeOrder({ bearer: admin.token }, admin.id, forSelf);
    expect(own.status).toBe(201);
    const root = await createUser(t.url, { role: 'ADMIN' });
    expect((await root.client.patch(`/api/v1/users/${admin.id}`, { role: 'USER' })).status).toBe(
      200,
    );

    const refused = await placeOrder({ bearer: admin.token }, yves.id, forOther);
    expect(refused.status).toBe(403);
    expect(replayed(refused)).toBe(false);
    expect(await ordersOf(yves.id)).toBe(before + 1);

    // a USER may still order for itself: the stored response, and still one order (the check ran
    // the request without committing it)
    const ownAgain = await placeOrder({ bearer: admin.token }, admin.id, forSelf);
    expect(ownAgain.status).toBe(201);
    expect(replayed(ownAgain)).toBe(true);
    expect(ownAgain.text).toBe(own.text);
    expect(ownAgain.headers.get('location')).toBe(own.headers.get('location'));
    expect(await ordersOf(admin.id)).toBe(1);
    const list = await admin.client.get(`/api/v1/users/${admin.id}/orders`);
    expect(list.body.meta.total).toBe(1);
  });

  it('a percent-encoded spelling of the path is the same scope: replayed, created once', async () => {
    const key = randomUUID();
    const title = unique('idem-');
    const first = await request(t.url, '/api/v1/posts', {
      method: 'POST',
      auth: { bearer: yves.token },
      headers: { 'idempotency-key': key },
      body: { title, body: 'x' },
    });
    expect(first.status).toBe(201);
    const encoded = await request(t.url, '/api/v1/%70osts', {
      method: 'POST',
      auth: { bearer: yves.token },
      headers: { 'idempotency-key': key },
      body: { title, body: 'x' },
    });
    expect(encoded.status).toBe(201);
    expect(replayed(encoded)).toBe(true);
    expect(encoded.text).toBe(first.text);
    expect(await postsTitled(t, title)).toBe(1);

    // a path parameter spelled with escapes is the same user's orders route
    const orderKey = randomUUID();
    const before = await ordersOf(yves.id);
    const plain = await placeOrder({ bearer: yves.token }, yves.id, orderKey);
    expect(plain.status).toBe(201);
    const escapedId = yves.id.replace(/^u/, '%75');
    const escaped = await placeOrder(
      { bearer: yves.token },
      yves.id,
      orderKey,
      `/api/v1/users/${escapedId}/orders`,
    );
    expect(escaped.status).toBe(201);
    expect(replayed(escaped)).toBe(true);
    expect(escaped.body.data.id).toBe(plain.body.data.id);
    expect(await ordersOf(yves.id)).toBe(before + 1);
  });
});

describe('Idempotency-Key expiry', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await startApp({ IDEMPOTENCY_TTL_S: '1' });
  });
  afterAll(() => t?.close());

  it('runs a key again once its record expired, and deletes expired records', async () => {
    const user = await createUser(t.url);
    const key = randomUUID();
    const title = unique('idem-');
    const first = await createPost(t, user, key, { title, body: 'x' });
    expect(first.status).toBe(201);
    const db = t.app.get(DatabaseService);
    const records = async () =>
      Number(
        (await db.query<{ n: number | string }>('SELECT COUNT(*) AS n FROM idempotency_keys'))[0]
          ?.n ?? 0,
      );
    expect(await records()).toBeGreaterThan(0);
    // the sweeper runs every TTL: wait for the record to go
    await vi.waitFor(async () => expect(await records()).toBe(0), {
      timeout: 5_000,
      interval: 100,
    });
    const later = await createPost(t, user, key, { title, body: 'x' });
    expect(later.status).toBe(201);
    expect(replayed(later)).toBe(false);
    expect(await postsTitled(t, title)).toBe(2);
  });
});

describe.skipIf(!usingPostgres)(
  `Idempotency-Key across two instances${usingPostgres ? '' : ' (skipped: two instances share one database on PostgreSQL only)'}`,
  () => {
    let a: TestApp;
    let b: TestApp;

    beforeAll(async () => {
      a = await startApp();
      b = await startApp({ DATABASE_URL: sameDatabase(a) });
    });
    afterAll(async () => {
      await b?.close();
      await a?.close();
    });

    /** The DATABASE_URL of `app`'s own schema, for a second instance on the same data. */
    function sameDatabase(app: TestApp): string {
      const db = app.config.database;
      if (db.type !== 'postgres' || !db.schema) {
        throw new Error('two instances need a PostgreSQL schema');
      }
      const url = new URL(db.url);
      url.searchParams.set('schema', db.schema);
      return url.toString();
    }

    it('replays on one instance the response the other gave, and runs a key once across both under concurrency', async () => {
      const user = await createUser(a.url);
      const key = randomUUID();
      const title = unique('idem-');
      const first = await createPost(a, user, key, { title, body: 'x' });
      expect(first.status).toBe(201);
      const onB = await createPost(b, user, key, { title, body: 'x' });
      expect(onB.status).toBe(201);
      expect(replayed(onB)).toBe(true);
      expect(onB.text).toBe(first.text);

      const raceKey = randomUUID();
      const raceTitle = unique('idem-');
      const answers = await Promise.all(
        Array.from({ length: 20 }, (_, i) =>
          createPost(i % 2 ? a : b, user, raceKey, { title: raceTitle, body: 'race' }),
        ),
      );
      expect(answers.filter((r) => r.status === 201 && !replayed(r))).toHaveLength(1);
      expect(answers.every((r) => r.status === 201 || r.status === 409)).toBe(true);
      expect(await postsTitled(a, raceTitle)).toBe(1);
    });
  },
);
