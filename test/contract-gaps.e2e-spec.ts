import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ADMIN_EMAIL,
  ADMIN_PASSWORD,
  freshDatabaseUrl,
  startApp,
  usingPostgres,
  type TestApp,
} from './helpers/app.js';
import {
  adminClient,
  createApiKey,
  createUser,
  tokenFor,
  unique,
  type CreatedUser,
} from './helpers/factories.js';
import { client, request, type Client } from './helpers/http.js';
import { gql } from './graphql-client.js';

/**
 * Contract behaviours that had no test of their own. Every test makes the users, posts, orders and
 * rooms it needs, so it passes alone and in any order.
 */

/** Resolves once wall-clock time is past `iso` (plus a margin for the server's clock reading). */
async function pastInstant(iso: string, marginMs = 50): Promise<void> {
  const wait = new Date(iso).getTime() - Date.now() + marginMs;
  if (wait > 0) {
    await new Promise((r) => setTimeout(r, wait));
  }
}

describe('contract behaviours', () => {
  let t: TestApp;
  let admin: Client;

  beforeAll(async () => {
    t = await startApp();
    admin = await adminClient(t.url);
  });
  afterAll(async () => {
    await t?.close();
  });

  describe('concurrent order transitions', () => {
    async function paidOrder(owner: CreatedUser): Promise<string> {
      const created = await owner.client.post(`/api/v1/users/${owner.id}/orders`, {
        items: [{ sku: 'SKU-1', quantity: 1, unit_price_cents: 100 }],
        currency: 'EUR',
      });
      expect(created.status, created.text).toBe(201);
      const id = created.body.data.id as string;
      expect((await admin.patch(`/api/v1/orders/${id}`, { status: 'paid' })).status).toBe(200);
      return id;
    }

    it('two conflicting transitions at once: exactly one wins, the other is 409', async () => {
      const owner = await createUser(t.url);
      // paid -> shipped and paid -> cancelled exclude each other: after either, the other is invalid
      for (let round = 0; round < 5; round++) {
        const id = await paidOrder(owner);
        const [shipped, cancelled] = await Promise.all([
          admin.patch(`/api/v1/orders/${id}`, { status: 'shipped' }),
          admin.patch(`/api/v1/orders/${id}`, { status: 'cancelled' }),
        ]);
        const statuses = [shipped.status, cancelled.status].sort();
        expect(statuses, `${shipped.text} ${cancelled.text}`).toEqual([200, 409]);
        const loser = shipped.status === 409 ? shipped : cancelled;
        expect(loser.body.error.code).toBe('conflict');
        const winner = shipped.status === 200 ? 'shipped' : 'cancelled';
        expect((await admin.get(`/api/v1/orders/${id}`)).body.data.status).toBe(winner);
      }
    });

    it('the same transition twice at once: one 200, the other 409 (paid -> paid is no transition)', async () => {
      const owner = await createUser(t.url);
      const created = await owner.client.post(`/api/v1/users/${owner.id}/orders`, {
        items: [{ sku: 'SKU-2', quantity: 2, unit_price_cents: 50 }],
        currency: 'EUR',
      });
      const id = created.body.data.id as string;
      const results = await Promise.all([
        admin.patch(`/api/v1/orders/${id}`, { status: 'paid' }),
        admin.patch(`/api/v1/orders/${id}`, { status: 'paid' }),
      ]);
      expect(results.map((r) => r.status).sort()).toEqual([200, 409]);
    });
  });

  describe('order total cap', () => {
    const CAP = 2_147_483_647;

    it('accepts a total of exactly 2147483647 minor units and refuses one more (422)', async () => {
      const owner = await createUser(t.url);
      const orders = `/api/v1/users/${owner.id}/orders`;
      // prices are capped at 100 000 000 each: 21 of those plus the rest reach the cap exactly
      const exact = await owner.client.post(orders, {
        items: [
          ...Array.from({ length: 21 }, () => ({
            sku: 'BIG',
            quantity: 1,
            unit_price_cents: 100_000_000,
          })),
          { sku: 'TAIL', quantity: 1, unit_price_cents: CAP - 21 * 100_000_000 },
        ],
        currency: 'EUR',
      });
      expect(exact.status, exact.text).toBe(201);
      expect(exact.body.data.total_cents).toBe(CAP);
      const over = await owner.client.post(orders, {
        items: [
          ...Array.from({ length: 21 }, () => ({
            sku: 'BIG',
            quantity: 1,
            unit_price_cents: 100_000_000,
          })),
          { sku: 'TAIL', quantity: 1, unit_price_cents: CAP - 21 * 100_000_000 + 1 },
        ],
        currency: 'EUR',
      });
      expect(over.status).toBe(422);
      expect(over.body.error.code).toBe('validation_failed');
      expect(over.body.error.details).toContainEqual(
        expect.objectContaining({ field: 'items', message: expect.stringContaining(String(CAP)) }),
      );
      const list = await owner.client.get(`${orders}?limit=100`);
      expect(list.body.meta.total).toBe(1);
    });
  });

  describe('boundary values', () => {
    const name = (n: number) => 'n'.repeat(n);
    /** An address of exactly `n` characters. */
    const email = (n: number) => {
      const domain = `@${unique('d')}.example.com`;
      // local parts are at most 64 characters: pad the domain with labels instead
      const local = 'a'.repeat(Math.min(64, n - domain.length));
      let rest = n - local.length - domain.length;
      let labels = '';
      while (rest > 0) {
        const size = Math.min(63, rest - 1);
        if (size < 1) {
          break;
        }
        labels += `${'b'.repeat(size)}.`;
        rest -= size + 1;
      }
      const value = `${local.slice(0, local.length - rest)}@${labels}${domain.slice(1)}`;
      expect(value).toHaveLength(n);
      return value;
    };

    it('name: 100 characters are accepted, 101 refused (422 on name)', async () => {
      const ok = await admin.post('/api/v1/users', { name: name(100), email: email(40) });
      expect(ok.status, ok.text).toBe(201);
      const bad = await admin.post('/api/v1/users', { name: name(101), email: email(40) });
      expect(bad.status).toBe(422);
      expect(bad.body.error.details).toEqual([expect.objectContaining({ field: 'name' })]);
    });

    it('email: 254 characters are accepted, 255 refused (422 on email)', async () => {
      const ok = await admin.post('/api/v1/users', { name: 'Long mail', email: email(254) });
      expect(ok.status, ok.text).toBe(201);
      const bad = await admin.post('/api/v1/users', { name: 'Longer mail', email: email(255) });
      expect(bad.status).toBe(422);
      expect(bad.body.error.details).toContainEqual(expect.objectContaining({ field: 'email' }));
    });

    it('age: 0 and 150 are accepted, 151 and -1 refused (422 on age)', async () => {
      for (const age of [0, 150]) {
        const ok = await admin.post('/api/v1/users', { name: 'Aged', email: email(30), age });
        expect(ok.status, ok.text).toBe(201);
        expect(ok.body.data.age).toBe(age);
      }
      for (const age of [151, -1]) {
        const bad = await admin.post('/api/v1/users', { name: 'Aged', email: email(30), age });
        expect(bad.status, String(age)).toBe(422);
        expect(bad.body.error.details).toEqual([expect.objectContaining({ field: 'age' })]);
      }
    });

    it('password: 128 characters are accepted (and sign in), 129 refused (422 on password)', async () => {
      const address = email(30);
      const password = 'p'.repeat(128);
      const ok = await admin.post('/api/v1/users', { name: 'Pw', email: address, password });
      expect(ok.status, ok.text).toBe(201);
      expect(await tokenFor(t.url, address, password)).toEqual(expect.any(String));
      const bad = await admin.post('/api/v1/users', {
        name: 'Pw',
        email: email(30),
        password: 'p'.repeat(129),
      });
      expect(bad.status).toBe(422);
      expect(bad.body.error.details).toEqual([expect.objectContaining({ field: 'password' })]);
    });

    it('post title: 200 characters are accepted, 201 refused (422 on title)', async () => {
      const author = await createUser(t.url);
      const ok = await author.client.post('/api/v1/posts', { title: 't'.repeat(200), body: '' });
      expect(ok.status, ok.text).toBe(201);
      expect(ok.body.data.title).toHaveLength(200);
      const bad = await author.client.post('/api/v1/posts', { title: 't'.repeat(201), body: '' });
      expect(bad.status).toBe(422);
      expect(bad.body.error.details).toEqual([expect.objectContaining({ field: 'title' })]);
    });
  });

  describe('a deleted user', () => {
    it('loses every credential at once: password, access token, refresh token, API keys', async () => {
      const u = await createUser(t.url);
      const signIn = await request(t.url, '/api/v1/auth/token', {
        method: 'POST',
        body: { email: u.email, password: u.password },
      });
      expect(signIn.status).toBe(200);
      const refresh = signIn.body.refresh_token as string;
      const key = await createApiKey(u.client);
      const byKey = client(t.url, { apiKey: key.key });
      expect((await byKey.get('/api/v1/auth/me')).status).toBe(200);

      expect((await admin.delete(`/api/v1/users/${u.id}`)).status).toBe(204);

      expect((await byKey.get('/api/v1/auth/me')).status).toBe(401);
      expect((await request(t.url, `/api/v1/auth/me?api_key=${key.key}`)).status).toBe(401);
      expect((await u.client.get('/api/v1/auth/me')).status).toBe(401);
      const basic = client(t.url, { basic: [u.email, u.password] });
      expect((await basic.get('/api/v1/auth/me')).status).toBe(401);
      const refreshed = await request(t.url, '/api/v1/auth/refresh', {
        method: 'POST',
        body: { refresh_token: refresh },
      });
      expect(refreshed.status).toBe(401);
      const token = await request(t.url, '/api/v1/auth/token', {
        method: 'POST',
        body: { email: u.email, password: u.password },
      });
      expect(token.status).toBe(401);
      // GraphQL takes the same credentials and refuses them the same way
      const viaGql = await gql(t.url, '{ me { id } }', { auth: { apiKey: key.key } });
      expect(viaGql.body.errors?.[0]?.extensions?.code).toBe('UNAUTHENTICATED');
    });

    it('leaves posts and messages in place with author null in GraphQL', async () => {
      const author = await createUser(t.url);
      const reader = await createUser(t.url);
      const post = await author.client.post('/api/v1/posts', { title: 'Orphan', body: 'b' });
      expect(post.status).toBe(201);
      const room = await author.client.post('/api/v1/rooms', { name: unique('orphans-') });
      const message = await author.client.post(`/api/v1/rooms/${room.body.data.id}/messages`, {
        content: 'hello',
      });
      expect(message.status).toBe(201);
      const query = `{
        post(id: "${post.body.data.id}") { id author { id } }
        message: node(id: "${message.body.data.id}") { id ... on Message { author { id } } }
      }`;
      const before = await gql(t.url, query, { auth: { bearer: reader.token } });
      expect(before.body.errors).toBeUndefined();
      expect(before.body.data.post.author).toEqual({ id: author.id });
      expect(before.body.data.message.author).toEqual({ id: author.id });

      expect((await admin.delete(`/api/v1/users/${author.id}`)).status).toBe(204);

      const after = await gql(t.url, query, { auth: { bearer: reader.token } });
      expect(after.body.errors).toBeUndefined();
      expect(after.body.data.post).toEqual({ id: post.body.data.id, author: null });
      expect(after.body.data.message).toEqual({ id: message.body.data.id, author: null });
    });
  });

  describe('sign-in', () => {
    it('accepts the email in another case (token, Basic), the password stays exact', async () => {
      const u = await createUser(t.url, { email: `${unique('Mixed')}@Example.COM` });
      for (const variant of [u.email.toUpperCase(), u.email.toLowerCase()]) {
        const res = await request(t.url, '/api/v1/auth/token', {
          method: 'POST',
          body: { email: variant, password: u.password },
        });
        expect(res.status, variant).toBe(200);
        const basic = client(t.url, { basic: [variant, u.password] });
        const me = await basic.get('/api/v1/auth/me');
        expect(me.status).toBe(200);
        expect(me.body.data.id).toBe(u.id);
      }
      const wrongCase = await request(t.url, '/api/v1/auth/token', {
        method: 'POST',
        body: { email: u.email, password: u.password.toUpperCase() },
      });
      expect(wrongCase.status).toBe(401);
    });
  });

  describe('caching headers on lists', () => {
    it.each(['/api/v1/users', '/api/v1/posts', '/api/v1/rooms'])(
      'GET and HEAD %s carry Cache-Control: private, no-cache and Vary on the credentials',
      async (path) => {
        const u = await createUser(t.url);
        for (const res of [await u.client.get(path), await u.client.head(path)]) {
          expect(res.status).toBe(200);
          expect(res.headers.get('cache-control')).toBe('private, no-cache');
          const vary = (res.headers.get('vary') ?? '')
            .split(',')
            .map((v) => v.trim().toLowerCase());
          expect(vary).toEqual(
            expect.arrayContaining(['accept', 'accept-version', 'authorization', 'x-api-key']),
          );
          expect(res.headers.get('etag')).toMatch(/^"[^"]+"$/);
        }
        const [get, head] = [await u.client.get(path), await u.client.head(path)];
        expect(head.text).toBe('');
        expect(head.headers.get('etag')).toBe(get.headers.get('etag'));
      },
    );

    it("a user's orders list carries them too", async () => {
      const u = await createUser(t.url);
      const res = await u.client.get(`/api/v1/users/${u.id}/orders`);
      expect(res.headers.get('cache-control')).toBe('private, no-cache');
      expect(res.headers.get('vary')).toMatch(/Authorization/);
    });
  });

  describe('If-Match with the viewer-dependent ETag', () => {
    it("PATCH compares with the ETag this caller's GET sends, not another viewer's", async () => {
      const owner = await createUser(t.url);
      const stranger = await createUser(t.url);
      const path = `/api/v1/users/${owner.id}`;
      const ownView = await owner.client.get(path);
      const strangerView = await stranger.client.get(path);
      expect(ownView.body.data.email).toBe(owner.email);
      expect(strangerView.body.data.email).toBeNull();
      const ownTag = ownView.headers.get('etag')!;
      const strangerTag = strangerView.headers.get('etag')!;
      expect(ownTag).not.toBe(strangerTag);

      // the stranger's tag names a representation the owner never receives: 412, nothing changes
      const stale = await owner.client.patch(
        path,
        { name: 'Changed' },
        {
          headers: { 'if-match': strangerTag },
        },
      );
      expect(stale.status).toBe(412);
      expect(stale.body.error.code).toBe('precondition_failed');
      expect((await owner.client.get(path)).body.data.name).toBe(ownView.body.data.name);

      // an ADMIN sees the email too: the same representation, the same tag, accepted
      const adminTag = (await admin.get(path)).headers.get('etag');
      expect(adminTag).toBe(ownTag);
      const ok = await owner.client.patch(
        path,
        { name: 'Changed' },
        {
          headers: { 'if-match': ownTag },
        },
      );
      expect(ok.status, ok.text).toBe(200);
      expect(ok.body.data.name).toBe('Changed');
      // the old tag is stale now
      const again = await admin.patch(path, { name: 'Again' }, { headers: { 'if-match': ownTag } });
      expect(again.status).toBe(412);
      // a fresh GET gives the tag that applies now
      const current = await owner.client.get(path);
      expect(current.headers.get('etag')).not.toBe(ownTag);
      const applied = await admin.patch(
        path,
        { name: 'Again' },
        {
          headers: { 'if-match': current.headers.get('etag')! },
        },
      );
      expect(applied.status).toBe(200);
    });
  });
});

// Suites that start apps of their own keep them apart from the shared app above: until each app has
// its own passport strategies, closing a second app in the middle of another's tests would break it.
describe('refresh-token lifetime', () => {
  it('refuses a refresh token once REFRESH_TTL_S has passed', async () => {
    const short = await startApp({ REFRESH_TTL_S: '1' });
    try {
      const signIn = await request(short.url, '/api/v1/auth/token', {
        method: 'POST',
        body: { email: ADMIN_EMAIL, password: ADMIN_PASSWORD },
      });
      expect(signIn.status).toBe(200);
      // a fresh one is good (and single-use: it is traded for the next)
      const first = await request(short.url, '/api/v1/auth/refresh', {
        method: 'POST',
        body: { refresh_token: signIn.body.refresh_token },
      });
      expect(first.status, first.text).toBe(200);
      const next = first.body.refresh_token as string;
      // REFRESH_TTL_S=1: the new token expires one second after this response at the latest
      await pastInstant(new Date(Date.now() + 1000).toISOString(), 100);
      const expired = await request(short.url, '/api/v1/auth/refresh', {
        method: 'POST',
        body: { refresh_token: next },
      });
      expect(expired.status).toBe(401);
      expect(expired.body.error.code).toBe('unauthorized');
    } finally {
      await short.close();
    }
  });
});

/** A database that outlives one app: a SQLite file in `dir`, or one PostgreSQL schema for both boots. */
function durableDatabaseUrl(dir: string, name: string): string {
  return usingPostgres ? freshDatabaseUrl() : `sqlite:${join(dir, `${name}.sqlite`)}`;
}

describe('restarts', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'atrium-restart-'));
  });
  afterAll(() => {
    rmSync(dir, { recursive: true, force: true });
  });

  it('a file database and the generated JWT key survive a restart', async () => {
    const env = {
      DATABASE_URL: `sqlite:${join(dir, 'durable.sqlite')}`,
      DATA_DIR: dir,
      JWT_PRIVATE_KEY: undefined,
    };
    const first = await startApp(env);
    let user: CreatedUser;
    let key: { id: string; key: string };
    try {
      expect(existsSync(join(dir, 'jwt-private.pem'))).toBe(true);
      user = await createUser(first.url, { name: 'Survivor' });
      key = await createApiKey(user.client);
    } finally {
      await first.close();
    }
    const second = await startApp(env);
    try {
      // the access token signed before the restart still verifies: the key was kept, not regenerated
      const me = await client(second.url, { bearer: user.token }).get('/api/v1/auth/me');
      expect(me.status, me.text).toBe(200);
      expect(me.body.data).toMatchObject({ id: user.id, name: 'Survivor' });
      expect((await client(second.url, { apiKey: key.key }).get('/api/v1/auth/me')).status).toBe(
        200,
      );
      expect(await tokenFor(second.url, user.email, user.password)).toEqual(expect.any(String));
    } finally {
      await second.close();
    }
  });

  it('ADMIN_EMAIL creates no second ADMIN when one exists', async () => {
    const DATABASE_URL = durableDatabaseUrl(dir, 'admins');
    const first = await startApp({ DATABASE_URL });
    await first.close();
    const otherEmail = `${unique('second-admin')}@example.com`;
    const second = await startApp({
      DATABASE_URL,
      ADMIN_EMAIL: otherEmail,
      ADMIN_PASSWORD: 'second-admin-password',
    });
    try {
      const admin = await adminClient(second.url); // the first ADMIN still signs in
      const admins = await admin.get('/api/v1/users?role=ADMIN&limit=100');
      expect(admins.body.data.map((u: { email: string }) => u.email)).toEqual([ADMIN_EMAIL]);
      const tried = await request(second.url, '/api/v1/auth/token', {
        method: 'POST',
        body: { email: otherEmail, password: 'second-admin-password' },
      });
      expect(tried.status).toBe(401);
    } finally {
      await second.close();
    }
  });

  it('ADMIN_EMAIL of an existing non-admin, with no ADMIN at all, promotes it (keeping its own password)', async () => {
    const DATABASE_URL = durableDatabaseUrl(dir, 'non-admin');
    const first = await startApp({
      DATABASE_URL,
      ADMIN_EMAIL: undefined,
      ADMIN_PASSWORD: undefined,
    });
    const email = `${unique('taken')}@example.com`;
    const password = 'own-password-123';
    try {
      const reg = await request(first.url, '/api/v1/auth/register', {
        method: 'POST',
        body: { name: 'Plain', email, password },
      });
      expect(reg.status, reg.text).toBe(201);
      expect(reg.body.data.role).toBe('USER');
    } finally {
      await first.close();
    }
    const second = await startApp({
      DATABASE_URL,
      ADMIN_EMAIL: email,
      ADMIN_PASSWORD: 'would-be-admin-password',
    });
    try {
      // the user is ADMIN now and keeps their password; the configured password opens nothing
      const me = await client(second.url, { basic: [email, password] }).get('/api/v1/auth/me');
      expect(me.status).toBe(200);
      expect(me.body.data.role).toBe('ADMIN');
      const tried = await request(second.url, '/api/v1/auth/token', {
        method: 'POST',
        body: { email, password: 'would-be-admin-password' },
      });
      expect(tried.status).toBe(401);
      const users = await client(second.url, { basic: [email, password] }).get(
        '/api/v1/users?role=ADMIN',
      );
      expect(users.body.meta.total).toBe(1);
      expect(users.body.data.map((u: { email: string }) => u.email)).toEqual([email]);
    } finally {
      await second.close();
    }
  });
});
