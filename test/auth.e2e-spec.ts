import { generateKeyPairSync } from 'node:crypto';
import jwt from 'jsonwebtoken';
import { DataSource } from 'typeorm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_EMAIL, ADMIN_PASSWORD, PUBLIC_URL, startApp, type TestApp } from './helpers/app.js';
import {
  adminClient,
  createApiKey,
  createUser,
  unique,
  type CreatedUser,
} from './helpers/factories.js';
import { client, request, type Client } from './helpers/http.js';

describe('authentication', () => {
  let t: TestApp;
  let admin: Client;
  let user: CreatedUser;

  beforeAll(async () => {
    // no refresh reuse grace window here: a second presentation is a replay at once
    // (test/refresh-grace.e2e-spec.ts covers the window)
    t = await startApp({ REFRESH_REUSE_GRACE_S: '0' });
    admin = await adminClient(t.url);
    user = await createUser(t.url, { name: 'Tokened' });
  });
  afterAll(async () => {
    await t.close();
  });

  const me = (headers: Record<string, string>) => request(t.url, '/api/v1/auth/me', { headers });

  describe('POST /auth/token and /auth/refresh', () => {
    it('issues an RS256 access token with iss, aud, exp and a refresh token', async () => {
      const res = await request(t.url, '/api/v1/auth/token', {
        method: 'POST',
        body: { email: user.email, password: user.password },
      });
      expect(res.status).toBe(200);
      expect(res.body).toEqual({
        access_token: expect.any(String),
        token_type: 'Bearer',
        expires_in: 900,
        refresh_token: expect.stringMatching(/^rt_/),
      });
      const decoded = jwt.decode(res.body.access_token, { complete: true })!;
      expect(decoded.header.alg).toBe('RS256');
      expect(decoded.payload).toMatchObject({
        sub: user.id,
        iss: PUBLIC_URL,
        aud: 'atrium-api',
        exp: expect.any(Number),
      });
    });

    it('answers 401 to a wrong password or unknown email', async () => {
      for (const body of [
        { email: user.email, password: 'wrong-password-123' },
        { email: `${unique()}@example.com`, password: 'whatever-password' },
      ]) {
        const res = await request(t.url, '/api/v1/auth/token', { method: 'POST', body });
        expect(res.status).toBe(401);
        expect(res.body.error.code).toBe('unauthorized');
        expect(res.headers.get('www-authenticate')).toContain('Basic realm="atrium"');
      }
    });

    it('rotates refresh tokens and revokes the family when a used one is replayed', async () => {
      const first = await request(t.url, '/api/v1/auth/token', {
        method: 'POST',
        body: { email: user.email, password: user.password },
      });
      const refreshed = await request(t.url, '/api/v1/auth/refresh', {
        method: 'POST',
        body: { refresh_token: first.body.refresh_token },
      });
      expect(refreshed.status).toBe(200);
      expect(refreshed.body.refresh_token).not.toBe(first.body.refresh_token);
      expect((await me({ authorization: `Bearer ${refreshed.body.access_token}` })).status).toBe(
        200,
      );

      const replay = await request(t.url, '/api/v1/auth/refresh', {
        method: 'POST',
        body: { refresh_token: first.body.refresh_token },
      });
      expect(replay.status).toBe(401);
      // the replay revoked the newer token of the same user too
      const next = await request(t.url, '/api/v1/auth/refresh', {
        method: 'POST',
        body: { refresh_token: refreshed.body.refresh_token },
      });
      expect(next.status).toBe(401);
    });

    it('returns 422 for a malformed token request', async () => {
      const res = await request(t.url, '/api/v1/auth/token', {
        method: 'POST',
        body: { email: 5 },
      });
      expect(res.status).toBe(422);
      expect(res.body.error.details).toContainEqual(expect.objectContaining({ field: 'password' }));
    });
  });

  describe('POST /auth/register', () => {
    it('creates a USER (never more) that can sign in', async () => {
      const email = `${unique()}@example.com`;
      const res = await request(t.url, '/api/v1/auth/register', {
        method: 'POST',
        body: { name: 'Newcomer', email, password: 'newcomer-password' },
      });
      expect(res.status).toBe(201);
      expect(res.body.data).toMatchObject({ name: 'Newcomer', email, role: 'USER' });
      expect(res.headers.get('location')).toBe(`${PUBLIC_URL}/api/v1/users/${res.body.data.id}`);
      const escalate = await request(t.url, '/api/v1/auth/register', {
        method: 'POST',
        body: {
          name: 'Sneaky',
          email: `${unique()}@example.com`,
          password: 'sneaky-password',
          role: 'ADMIN',
        },
      });
      expect(escalate.status).toBe(422);
      const basic = Buffer.from(`${email}:newcomer-password`).toString('base64');
      expect((await me({ authorization: `Basic ${basic}` })).body.data.role).toBe('USER');
    });

    it('returns 409 for a taken email and 422 for a short password', async () => {
      const taken = await request(t.url, '/api/v1/auth/register', {
        method: 'POST',
        body: { name: 'Again', email: user.email, password: 'again-password-1' },
      });
      expect(taken.status).toBe(409);
      const short = await request(t.url, '/api/v1/auth/register', {
        method: 'POST',
        body: { name: 'Short', email: `${unique()}@example.com`, password: 'short' },
      });
      expect(short.status).toBe(422);
      expect(short.body.error.details).toContainEqual(
        expect.objectContaining({ field: 'password' }),
      );
    });
  });

  describe('Basic', () => {
    it('accepts email:password and rejects a wrong password with 401 + WWW-Authenticate', async () => {
      const good = Buffer.from(`${ADMIN_EMAIL}:${ADMIN_PASSWORD}`).toString('base64');
      expect((await me({ authorization: `Basic ${good}` })).status).toBe(200);
      const bad = Buffer.from(`${ADMIN_EMAIL}:nope-nope-nope`).toString('base64');
      const res = await me({ authorization: `Basic ${bad}` });
      expect(res.status).toBe(401);
      expect(res.headers.get('www-authenticate')).toBe('Basic realm="atrium", Bearer');
      expect(res.body.error.code).toBe('unauthorized');
    });
  });

  describe('Bearer JWT', () => {
    const claims = () => ({ sub: user.id, role: 'ADMIN', iss: PUBLIC_URL, aud: 'atrium-api' });
    const ownKey = () => t.config.jwtPrivateKey!;

    it('accepts a valid token and takes the role from the database, not the token', async () => {
      const token = jwt.sign(claims(), ownKey(), { algorithm: 'RS256', expiresIn: 60 });
      const res = await me({ authorization: `Bearer ${token}` });
      expect(res.status).toBe(200);
      expect(res.body.data.auth).toMatchObject({ method: 'jwt', role: 'USER' });
    });

    it.each([
      [
        'no exp',
        () =>
          jwt.sign({ sub: 'x', iss: PUBLIC_URL, aud: 'atrium-api' }, 'k', { algorithm: 'HS256' }),
        'hs',
      ],
      ['another issuer', () => 'iss', 'iss'],
      ['another audience', () => 'aud', 'aud'],
      ['expired', () => 'exp', 'exp'],
      ['alg none', () => 'none', 'none'],
      ['a foreign key', () => 'foreign', 'foreign'],
    ])('rejects a token with %s (401)', async (_name, _make, kind) => {
      const base = claims();
      let token: string;
      switch (kind) {
        case 'iss':
          token = jwt.sign({ ...base, iss: 'https://evil.example' }, ownKey(), {
            algorithm: 'RS256',
            expiresIn: 60,
          });
          break;
        case 'aud':
          token = jwt.sign({ ...base, aud: 'other' }, ownKey(), {
            algorithm: 'RS256',
            expiresIn: 60,
          });
          break;
        case 'exp':
          token = jwt.sign({ ...base, exp: Math.floor(Date.now() / 1000) - 10 }, ownKey(), {
            algorithm: 'RS256',
          });
          break;
        case 'none':
          token = `${Buffer.from('{"alg":"none","typ":"JWT"}').toString('base64url')}.${Buffer.from(
            JSON.stringify({ ...base, exp: Math.floor(Date.now() / 1000) + 60 }),
          ).toString('base64url')}.`;
          break;
        case 'foreign': {
          const foreign = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey;
          token = jwt.sign(base, foreign, { algorithm: 'RS256', expiresIn: 60 });
          break;
        }
        default: {
          // an RS256-signed token without exp (jsonwebtoken alone would accept it)
          token = jwt.sign(base, ownKey(), { algorithm: 'RS256', noTimestamp: true });
        }
      }
      const res = await me({ authorization: `Bearer ${token}` });
      expect(res.status).toBe(401);
      expect(res.body.error.code).toBe('unauthorized');
    });

    it('rejects garbage and an unknown scheme', async () => {
      expect((await me({ authorization: 'Bearer not.a.jwt' })).status).toBe(401);
      expect((await me({ authorization: 'Digest abc' })).status).toBe(401);
    });
  });

  describe('API keys', () => {
    it('creates a key (secret shown once), accepts it by header and by query, lists and revokes it', async () => {
      const created = await user.client.post('/api/v1/api-keys', { name: 'ci' });
      expect(created.status).toBe(201);
      const key = created.body.data;
      expect(key).toMatchObject({
        id: expect.stringMatching(/^key_/),
        name: 'ci',
        role: 'USER',
        key: expect.stringMatching(/^atr_/),
      });
      expect(created.headers.get('location')).toBe(`${PUBLIC_URL}/api/v1/api-keys/${key.id}`);
      expect(key.prefix).toBe(key.key.slice(0, 12));

      const ds = t.app.get(DataSource);
      const stored = await ds.query<{ key_hash: string }[]>('SELECT key_hash FROM api_keys');
      expect(stored.some((r) => r.key_hash === key.key)).toBe(false); // only the hash is stored
      expect(stored.every((r) => /^[0-9a-f]{64}$/.test(r.key_hash))).toBe(true);

      const byHeader = await me({ 'x-api-key': key.key });
      expect(byHeader.status).toBe(200);
      expect(byHeader.body.data.auth).toMatchObject({ method: 'api_key', key_id: key.id });
      const byQuery = await request(
        t.url,
        `/api/v1/auth/me?api_key=${encodeURIComponent(key.key)}`,
      );
      expect(byQuery.status).toBe(200);

      const list = await user.client.get('/api/v1/api-keys');
      expect(list.status).toBe(200);
      expect(list.body.data.map((k: { id: string }) => k.id)).toContain(key.id);
      expect(
        list.body.data.every((k: Record<string, unknown>) => !('key' in k) && !('key_hash' in k)),
      ).toBe(true);

      expect((await user.client.delete(`/api/v1/api-keys/${key.id}`)).status).toBe(204);
      expect((await user.client.delete(`/api/v1/api-keys/${key.id}`)).status).toBe(204);
      expect((await me({ 'x-api-key': key.key })).status).toBe(401);
      const after = await user.client.get(`/api/v1/api-keys/${key.id}`);
      expect(after.body.data.revoked_at).toEqual(expect.any(String));
    });

    it('caps a key at its owner role: a higher role is 403, a lower one limits the caller', async () => {
      const tooHigh = await user.client.post('/api/v1/api-keys', { name: 'x', role: 'ADMIN' });
      expect(tooHigh.status).toBe(403);
      const guestKey = await createApiKey(admin, { role: 'GUEST' });
      const asGuest = client(t.url, { apiKey: guestKey.key });
      expect((await asGuest.get('/api/v1/users')).status).toBe(200);
      expect(
        (await asGuest.post('/api/v1/users', { name: 'No', email: `${unique()}@example.com` }))
          .status,
      ).toBe(403);
    });

    it('rejects an expired key, an unknown key, and a past expiry at creation', async () => {
      const soon = new Date(Date.now() + 1000).toISOString();
      const key = await createApiKey(user.client, { expires_at: soon });
      expect((await me({ 'x-api-key': key.key })).status).toBe(200);
      // wait for the expiry instant itself (not a fixed pause), then the key is refused
      await new Promise((r) => setTimeout(r, Math.max(0, Date.parse(soon) - Date.now() + 20)));
      expect((await me({ 'x-api-key': key.key })).status).toBe(401);
      expect((await me({ 'x-api-key': 'atr_thisisnotakeyatall' })).status).toBe(401);
      const past = await user.client.post('/api/v1/api-keys', {
        name: 'past',
        expires_at: '2000-01-01T00:00:00Z',
      });
      expect(past.status).toBe(422);
    });

    it("keeps other users' keys private (404) but lets an ADMIN see and revoke them", async () => {
      const other = await createUser(t.url);
      const key = await createApiKey(other.client);
      expect((await user.client.get(`/api/v1/api-keys/${key.id}`)).status).toBe(404);
      expect((await user.client.delete(`/api/v1/api-keys/${key.id}`)).status).toBe(404);
      expect((await admin.get(`/api/v1/api-keys/${key.id}`)).status).toBe(200);
      expect((await admin.delete(`/api/v1/api-keys/${key.id}`)).status).toBe(204);
      expect((await me({ 'x-api-key': key.key })).status).toBe(401);
    });

    it('needs credentials (401 without)', async () => {
      expect((await client(t.url).get('/api/v1/api-keys')).status).toBe(401);
    });
  });
});
