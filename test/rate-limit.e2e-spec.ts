import { randomInt } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApp, type TestApp } from './helpers/app.js';
import { createApiKey } from './helpers/factories.js';
import { client, request } from './helpers/http.js';
import { rateHeaders, signUp } from './helpers/rate-limit.js';

const basic = (email: string, password: string) =>
  `Basic ${Buffer.from(`${email}:${password}`).toString('base64')}`;

describe('REST request limits per identity', () => {
  let t: TestApp;
  beforeAll(async () => {
    // 127.0.0.1 is trusted so that each sign-up's POST /auth/token (an anonymous request, counted by
    // client address) comes from an address of its own and spends no test's bucket
    t = await startApp({ RATE_LIMIT: '4', RATE_LIMIT_WINDOW_S: '2', TRUSTED_PROXIES: '127.0.0.1' });
  });
  const signUpElsewhere = () => signUp(t.url, `10.98.${randomInt(256)}.${randomInt(1, 255)}`);
  afterAll(async () => {
    await t.close();
  });

  it('carries RateLimit-* headers, then answers 429 with Retry-After and the envelope', async () => {
    const u = await signUpElsewhere();
    for (let i = 0; i < 4; i++) {
      const res = await u.client.get('/api/v1/auth/me');
      expect(res.status).toBe(200);
      const h = rateHeaders(res);
      expect(h).toMatchObject({ limit: 4, remaining: 3 - i, retryAfter: null });
      expect(h.reset).toBeGreaterThanOrEqual(1);
      expect(h.reset).toBeLessThanOrEqual(2);
    }
    // from a browser origin, so the CORS headers are there to check
    const refused = await u.client.get('/api/v1/auth/me', {
      headers: { origin: 'http://localhost:5173' },
    });
    expect(refused.status).toBe(429);
    expect(refused.body).toEqual({
      error: { code: 'rate_limited', message: expect.stringMatching(/retry in \d+ s/) },
    });
    const h = rateHeaders(refused);
    expect(h).toMatchObject({ limit: 4, remaining: 0 });
    expect(h.retryAfter).toBeGreaterThanOrEqual(1);
    expect(h.retryAfter).toBeLessThanOrEqual(2);
    expect(refused.headers.get('access-control-allow-origin')).toBe('http://localhost:5173');
    const exposed = (refused.headers.get('access-control-expose-headers') ?? '')
      .split(',')
      .map((h) => h.trim().toLowerCase());
    expect(exposed).toContain('retry-after');
    expect(exposed).toContain('ratelimit-remaining');
  });

  it('counts every route and method against the same identity bucket', async () => {
    const u = await signUpElsewhere();
    expect((await u.client.get('/api/v1/auth/me')).status).toBe(200);
    expect((await u.client.get(`/api/v1/users/${u.id}`)).status).toBe(200);
    expect((await u.client.get('/api/v1/api-keys')).status).toBe(200);
    const last = await u.client.patch(
      `/api/v1/users/${u.id}`,
      { name: 'Renamed' },
      { headers: { 'content-type': 'application/merge-patch+json' } },
    );
    expect(rateHeaders(last).remaining).toBe(0);
    expect((await u.client.get(`/api/v1/users/${u.id}`)).status).toBe(429);
  });

  it('opens the bucket again when the window ends', async () => {
    const u = await signUpElsewhere();
    for (let i = 0; i < 4; i++) {
      expect((await u.client.get('/api/v1/auth/me')).status).toBe(200);
    }
    const refused = await u.client.get('/api/v1/auth/me');
    expect(refused.status).toBe(429);
    await sleep(rateHeaders(refused).retryAfter! * 1000 + 100);
    const again = await u.client.get('/api/v1/auth/me');
    expect(again.status).toBe(200);
    expect(rateHeaders(again)).toMatchObject({ limit: 4, remaining: 3 });
  });

  it('keeps a bucket per identity: one user over the limit does not limit another', async () => {
    const [a, b] = await Promise.all([signUpElsewhere(), signUpElsewhere()]);
    for (let i = 0; i < 4; i++) {
      await a.client.get('/api/v1/auth/me');
    }
    expect((await a.client.get('/api/v1/auth/me')).status).toBe(429);
    const other = await b.client.get('/api/v1/auth/me');
    expect(other.status).toBe(200);
    expect(rateHeaders(other).remaining).toBe(3);
  });

  it('counts every API key of a user against its owner’s bucket: two keys and the JWT share one', async () => {
    const owner = await signUpElsewhere();
    const first = await createApiKey(owner.client); // each creation: one request of the owner's bucket
    const second = await createApiKey(owner.client);
    const byFirst = await client(t.url, { apiKey: first.key }).get('/api/v1/auth/me');
    expect(byFirst.status).toBe(200);
    expect(byFirst.body.data.auth.key_id).toBe(first.id);
    expect(rateHeaders(byFirst).remaining).toBe(1);
    const bySecond = await client(t.url, { apiKey: second.key }).get('/api/v1/auth/me');
    expect(bySecond.status).toBe(200);
    expect(rateHeaders(bySecond).remaining).toBe(0);
    expect((await client(t.url, { apiKey: first.key }).get('/api/v1/auth/me')).status).toBe(429);
    expect((await client(t.url, { apiKey: second.key }).get('/api/v1/auth/me')).status).toBe(429);
    expect((await owner.client.get('/api/v1/auth/me')).status).toBe(429);
  });

  it('counts requests the auth guard refuses: 403 for the role by identity, 401 without credentials by address', async () => {
    const u = await signUpElsewhere();
    for (let i = 0; i < 4; i++) {
      const res = await u.client.post('/api/v1/users', {
        name: 'Nope',
        email: 'nope@example.com',
        password: 'nope-password-1',
      });
      expect(res.status).toBe(403);
      expect(rateHeaders(res)).toMatchObject({ limit: 4, remaining: 3 - i });
    }
    const refused = await u.client.post('/api/v1/users', {
      name: 'Nope',
      email: 'nope@example.com',
      password: 'nope-password-1',
    });
    expect(refused.status).toBe(429);
    expect((await u.client.get('/api/v1/auth/me')).status).toBe(429);

    // anonymous: by client address (a fresh app, so earlier tests' anonymous requests do not count)
    const fresh = await startApp({ RATE_LIMIT: '2', RATE_LIMIT_WINDOW_S: '30' });
    try {
      const statuses: number[] = [];
      for (let i = 0; i < 3; i++) {
        statuses.push((await request(fresh.url, '/api/v1/auth/me')).status);
      }
      expect(statuses).toEqual([401, 401, 429]);
    } finally {
      await fresh.close();
    }
  });

  it('does not limit the health probes and metrics (not API routes)', async () => {
    for (let i = 0; i < 8; i++) {
      const res = await request(t.url, '/health/live');
      expect(res.status).toBe(200);
      expect(res.headers.get('ratelimit-limit')).toBeNull();
    }
  });
});

describe('per-address auth bucket (credential endpoints and failed credential checks)', () => {
  let t: TestApp;
  let u: Awaited<ReturnType<typeof signUp>>;
  const from = (ip: string, headers: Record<string, string> = {}) => ({
    ...headers,
    'x-forwarded-for': ip,
  });

  beforeAll(async () => {
    // 127.0.0.1 is a trusted proxy here, so each test can speak from its own client address
    t = await startApp({
      AUTH_RATE_LIMIT: '3',
      AUTH_RATE_LIMIT_WINDOW_S: '2',
      TRUSTED_PROXIES: '127.0.0.1',
    });
    u = await signUp(t.url, '10.0.0.1');
  });
  afterAll(async () => {
    await t.close();
  });

  it('counts failed POST /auth/token per address and per account; a wrong refresh token is refused like a wrong password', async () => {
    const ip = '10.0.1.1';
    const u = await signUp(t.url, '10.0.1.9'); // its own account: this test uses its bucket up
    for (let i = 0; i < 3; i++) {
      const res = await request(t.url, '/api/v1/auth/token', {
        method: 'POST',
        body: { email: u.email, password: 'wrong-password-123' },
        headers: from(ip),
      });
      expect(res.status).toBe(401);
    }
    // the account's bucket is used up: its password is not checked, right or wrong, from anywhere
    for (const [password, address] of [
      ['wrong-password-123', ip],
      [u.password, ip],
      [u.password, '10.0.1.2'],
    ] as const) {
      const refused = await request(t.url, '/api/v1/auth/token', {
        method: 'POST',
        body: { email: u.email, password },
        headers: from(address),
      });
      expect(refused.status).toBe(429);
      expect(refused.body.error.code).toBe('rate_limited');
      expect(rateHeaders(refused)).toMatchObject({ limit: 3, remaining: 0 });
      expect(rateHeaders(refused).retryAfter).toBeGreaterThanOrEqual(1);
    }
    // a wrong refresh token from that address counts too, and is refused past the budget
    const refresh = await request(t.url, '/api/v1/auth/refresh', {
      method: 'POST',
      body: { refresh_token: 'rt_not_a_real_refresh_token_0000' },
      headers: from(ip),
    });
    expect(refresh.status).toBe(429);
  });

  it('counts failed Basic, API-key and Bearer checks per address, and never refuses valid credentials', async () => {
    const ip = '10.0.2.1';
    const u = await signUp(t.url, '10.0.2.9');
    const key = await createApiKey(u.client);
    const failures: Record<string, string>[] = [
      { authorization: basic(u.email, 'wrong-password-123') },
      { 'x-api-key': 'ak_this_key_does_not_exist_0000' },
      { authorization: 'Bearer not.a.jwt' },
    ];
    for (const headers of failures) {
      const res = await request(t.url, '/api/v1/auth/me', { headers: from(ip, headers) });
      expect(res.status).toBe(401);
    }
    // over the address's budget, wrong credentials get 429 (a guesser is slowed and learns nothing)
    for (const headers of failures) {
      const res = await request(t.url, '/api/v1/auth/me', { headers: from(ip, headers) });
      expect(res.status).toBe(429);
      expect(res.body.error.code).toBe('rate_limited');
      expect(rateHeaders(res)).toMatchObject({ limit: 3, remaining: 0 });
      expect(rateHeaders(res).retryAfter).toBeGreaterThanOrEqual(1);
    }
    // ... but valid ones from the same address still work: Bearer, API key, and a password whose
    // account's bucket is not used up
    const valid: Record<string, string>[] = [
      { authorization: `Bearer ${u.token}` },
      { 'x-api-key': key.key },
      { authorization: basic(u.email, u.password) },
    ];
    for (const headers of valid) {
      const res = await request(t.url, '/api/v1/auth/me', { headers: from(ip, headers) });
      expect(res.status, JSON.stringify(headers)).toBe(200);
    }
  });

  it('does not count successful credential checks', async () => {
    const ip = '10.0.3.1';
    for (let i = 0; i < 5; i++) {
      const res = await request(t.url, '/api/v1/auth/me', {
        headers: from(ip, { authorization: basic(u.email, u.password) }),
      });
      expect(res.status).toBe(200);
    }
  });

  it('does not count requests without credentials (401 without a check)', async () => {
    const ip = '10.0.4.1';
    for (let i = 0; i < 5; i++) {
      expect((await request(t.url, '/api/v1/auth/me', { headers: from(ip) })).status).toBe(401);
    }
    expect(
      (
        await request(t.url, '/api/v1/auth/me', {
          headers: from(ip, { authorization: `Bearer ${u.token}` }),
        })
      ).status,
    ).toBe(200);
  });
});

describe('client address', () => {
  it('ignores X-Forwarded-For unless the peer is a trusted proxy', async () => {
    const t = await startApp({ AUTH_RATE_LIMIT: '2', AUTH_RATE_LIMIT_WINDOW_S: '30' });
    try {
      const statuses: number[] = [];
      for (const ip of ['10.1.0.1', '10.1.0.2', '10.1.0.3']) {
        const res = await request(t.url, '/api/v1/auth/token', {
          method: 'POST',
          body: { email: 'nobody@example.com', password: 'wrong-password-123' },
          headers: { 'x-forwarded-for': ip },
        });
        statuses.push(res.status);
      }
      expect(statuses).toEqual([401, 401, 429]);
    } finally {
      await t.close();
    }
  });
});

describe('RATE_LIMIT_ENABLED=false', () => {
  it('limits nothing and sends no RateLimit headers', async () => {
    const t = await startApp({
      RATE_LIMIT: '1',
      AUTH_RATE_LIMIT: '1',
      RATE_LIMIT_ENABLED: 'false',
    });
    try {
      const u = await signUp(t.url);
      for (let i = 0; i < 3; i++) {
        const res = await u.client.get('/api/v1/auth/me');
        expect(res.status).toBe(200);
        expect(res.headers.get('ratelimit-limit')).toBeNull();
      }
    } finally {
      await t.close();
    }
  });
});
