import { createClient } from 'graphql-ws';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { startApp, type TestApp } from './helpers/app.js';
import { createApiKey, unique } from './helpers/factories.js';
import { client, request } from './helpers/http.js';
import { RateLimitStore } from '../src/rate-limit/rate-limit.store.js';
import { rateHeaders, signUp } from './helpers/rate-limit.js';

const basic = (email: string, password: string) =>
  `Basic ${Buffer.from(`${email}:${password}`).toString('base64')}`;

/**
 * One query over a real graphql-ws client whose upgrade request carries X-Forwarded-For (the app
 * trusts 127.0.0.1): the data, or the close code when the socket was refused.
 */
async function overSocket(
  base: string,
  ip: string,
  params: Record<string, string>,
  query = '{ me { id } }',
): Promise<{ data?: any; errors?: any; closeCode?: number }> {
  class Forwarded extends WebSocket {
    constructor(url: string, protocols?: string | string[]) {
      super(url, protocols, { headers: { 'x-forwarded-for': ip } });
    }
  }
  const ws = createClient({
    url: `${base.replace(/^http/, 'ws')}/graphql`,
    webSocketImpl: Forwarded,
    connectionParams: params,
    retryAttempts: 0,
    lazy: true,
  });
  try {
    return await new Promise((resolve) => {
      let result: { data?: any; errors?: any } = {};
      ws.on('closed', (e) => resolve({ closeCode: (e as { code: number }).code }));
      ws.subscribe(
        { query },
        {
          next: (r) => (result = r),
          error: (err) =>
            resolve(
              Array.isArray(err)
                ? { errors: err }
                : { closeCode: (err as { code?: number }).code ?? -1 },
            ),
          complete: () => resolve(result),
        },
      );
    });
  } finally {
    await ws.dispose();
  }
}

function gqlHttp(base: string, ip: string, headers: Record<string, string>) {
  return request(base, '/graphql', {
    method: 'POST',
    body: { query: '{ me { id } }' },
    headers: { ...headers, 'x-forwarded-for': ip },
  });
}

function login(base: string, ip: string, email: string, password: string) {
  return request(base, '/api/v1/auth/token', {
    method: 'POST',
    body: { email, password },
    headers: { 'x-forwarded-for': ip },
  });
}

describe('the credential buckets never lock out valid credentials', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startApp({
      AUTH_RATE_LIMIT: '10',
      AUTH_RATE_LIMIT_WINDOW_S: '60',
      TRUSTED_PROXIES: '127.0.0.1',
    });
  });
  afterAll(async () => {
    await t.close();
  });

  it('after 10+ failed logins from one address, a valid Bearer and API key from it still get 200 (REST, GraphQL, WebSocket); wrong passwords get 429', async () => {
    const ip = `10.20.${Math.floor(Math.random() * 250)}.1`;
    const u = await signUp(t.url, '10.20.255.1');
    const key = await createApiKey(u.client);
    const statuses: number[] = [];
    for (let i = 0; i < 12; i++) {
      statuses.push((await login(t.url, ip, u.email, `wrong-password-${i}`)).status);
    }
    expect(statuses).toEqual([...Array<number>(10).fill(401), 429, 429]);
    // wrong passwords stay refused, also at other accounts once the address is over its budget
    expect((await login(t.url, ip, u.email, 'wrong-password-x')).status).toBe(429);
    const other = await signUp(t.url, '10.20.255.2');
    expect((await login(t.url, ip, other.email, 'wrong-password-x')).status).toBe(429);
    const basicWrong = await request(t.url, '/api/v1/auth/me', {
      headers: { authorization: basic(u.email, 'wrong-password-y'), 'x-forwarded-for': ip },
    });
    expect(basicWrong.status).toBe(429);
    expect(rateHeaders(basicWrong).retryAfter).toBeGreaterThanOrEqual(1);

    // REST
    for (const headers of [
      { authorization: `Bearer ${u.token}` },
      { 'x-api-key': key.key },
    ] as Record<string, string>[]) {
      const res = await request(t.url, '/api/v1/auth/me', {
        headers: { ...headers, 'x-forwarded-for': ip },
      });
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      expect(res.body.data.id).toBe(u.id);
    }
    const byQuery = await request(t.url, `/api/v1/auth/me?api_key=${key.key}`, {
      headers: { 'x-forwarded-for': ip },
    });
    expect(byQuery.status).toBe(200);
    // GraphQL over HTTP
    const headerSets: Record<string, string>[] = [
      { authorization: `Bearer ${u.token}` },
      { 'x-api-key': key.key },
    ];
    for (const headers of headerSets) {
      const res = await gqlHttp(t.url, ip, headers);
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      expect(res.body.data.me.id).toBe(u.id);
    }
    // GraphQL over WebSocket
    const paramSets: Record<string, string>[] = [
      { Authorization: `Bearer ${u.token}` },
      { apiKey: key.key },
    ];
    for (const params of paramSets) {
      const res = await overSocket(t.url, ip, params);
      expect(res.closeCode, JSON.stringify(res)).toBeUndefined();
      expect(res.data?.me?.id).toBe(u.id);
    }
    // a wrong token over the socket from that address: 4429
    expect((await overSocket(t.url, ip, { Authorization: 'Bearer not.a.jwt' })).closeCode).toBe(
      4429,
    );
    // the right password of another account is still checked from that address
    const signedIn = await login(t.url, ip, other.email, other.password);
    expect(signedIn.status).toBe(200);
    // a valid refresh token is served from that address; a wrong one is 429
    const refresh = (token: string) =>
      request(t.url, '/api/v1/auth/refresh', {
        method: 'POST',
        body: { refresh_token: token },
        headers: { 'x-forwarded-for': ip },
      });
    expect((await refresh(signedIn.body.refresh_token as string)).status).toBe(200);
    expect((await refresh('rt_not_a_real_refresh_token_0000')).status).toBe(429);
  });

  it('slows a distributed guess at one account (one try per address); its owner keeps the tokens and keys they hold', async () => {
    const owner = await signUp(t.url, '10.21.255.1');
    const key = await createApiKey(owner.client);
    const statuses: number[] = [];
    for (let i = 0; i < 12; i++) {
      statuses.push((await login(t.url, `10.21.${i}.7`, owner.email, `guess-${i}`)).status);
    }
    expect(statuses).toEqual([...Array<number>(10).fill(401), 429, 429]);
    // Basic at that account: refused without a check, whatever the address
    const basicRes = await request(t.url, '/api/v1/auth/me', {
      headers: {
        authorization: basic(owner.email, owner.password),
        'x-forwarded-for': '10.21.99.1',
      },
    });
    expect(basicRes.status).toBe(429);
    expect(rateHeaders(basicRes)).toMatchObject({ limit: 10, remaining: 0 });
    expect((await login(t.url, '10.21.99.2', owner.email, owner.password)).status).toBe(429);
    // the owner's bearer token and API key still work, from a guesser's address too
    const viaToken = await request(t.url, '/api/v1/auth/me', {
      headers: { authorization: `Bearer ${owner.token}`, 'x-forwarded-for': '10.21.3.7' },
    });
    expect(viaToken.status).toBe(200);
    const viaKey = await gqlHttp(t.url, '10.21.4.7', { 'x-api-key': key.key });
    expect(viaKey.body.data.me.id).toBe(owner.id);
    // other accounts are not affected
    const bystander = await signUp(t.url, '10.21.255.2');
    expect((await login(t.url, '10.21.5.7', bystander.email, bystander.password)).status).toBe(200);
  });
});

describe('the hard per-address limit', () => {
  it('stops checking passwords from an address past AUTH_ADDRESS_HARD_LIMIT failures, still serving tokens', async () => {
    const t = await startApp({
      AUTH_RATE_LIMIT: '2',
      AUTH_ADDRESS_HARD_LIMIT: '4',
      AUTH_RATE_LIMIT_WINDOW_S: '60',
      TRUSTED_PROXIES: '127.0.0.1',
    });
    try {
      const ip = '10.22.0.1';
      const u = await signUp(t.url, '10.22.0.2');
      const statuses: number[] = [];
      for (let i = 0; i < 4; i++) {
        // a spray: one guess at each of several accounts
        statuses.push((await login(t.url, ip, `${unique()}@example.com`, 'guess-123456')).status);
      }
      expect(statuses).toEqual([401, 401, 429, 429]);
      // 4 failures: no password is checked from this address any more, not even a right one
      expect((await login(t.url, ip, u.email, u.password)).status).toBe(429);
      const me = await request(t.url, '/api/v1/auth/me', {
        headers: { authorization: `Bearer ${u.token}`, 'x-forwarded-for': ip },
      });
      expect(me.status).toBe(200);
      // from another address the same password works
      expect((await login(t.url, '10.22.0.3', u.email, u.password)).status).toBe(200);
    } finally {
      await t.close();
    }
  });
});

describe('passport strategies per application', () => {
  it('app A still authenticates with its own data after app B started and closed in the same process', async () => {
    const a = await startApp();
    try {
      const u = await signUp(a.url);
      const key = await createApiKey(u.client);
      const b = await startApp();
      const onB = await signUp(b.url);
      expect((await onB.client.get('/api/v1/auth/me')).status).toBe(200);
      await b.close();

      const me = async (auth: Parameters<typeof client>[1], path = '/api/v1/auth/me') => {
        const res = await client(a.url, auth).get(path);
        return { status: res.status, id: res.body?.data?.id };
      };
      expect(await me({ basic: [u.email, u.password] })).toEqual({ status: 200, id: u.id });
      expect(await me({ bearer: u.token })).toEqual({ status: 200, id: u.id });
      expect(await me({ apiKey: key.key })).toEqual({ status: 200, id: u.id });
      expect(await me(undefined, `/api/v1/auth/me?api_key=${key.key}`)).toEqual({
        status: 200,
        id: u.id,
      });
      // B's user does not exist in A (A checks against its own database)
      expect((await me({ basic: [onB.email, onB.password] })).status).toBe(401);
      expect((await me({ bearer: onB.token })).status).toBe(401);
    } finally {
      await a.close();
    }
  });
});

describe('OpenAPI security requirements from @Authenticated', () => {
  it('lists Bearer, Basic and API key once on every protected route (/auth/me and /api-keys included), security: [] on public ones', async () => {
    const t = await startApp();
    try {
      const doc = await request(t.url, '/api/docs-json');
      const ops = Object.entries(doc.body.paths as Record<string, Record<string, any>>).flatMap(
        ([path, methods]) =>
          Object.entries(methods).map(([m, op]) => ({ route: `${m} ${path}`, op })),
      );
      const publicRoutes = new Set([
        'post /api/v1/auth/token',
        'post /api/v1/auth/refresh',
        'post /api/v1/auth/logout',
        'post /api/v1/auth/register',
      ]);
      const expected = [{ bearer: [] }, { basic: [] }, { api_key: [] }, { api_key_query: [] }];
      for (const { route, op } of ops) {
        if (publicRoutes.has(route) || !route.includes('/api/v1/')) {
          expect(op.security, route).toEqual([]);
        } else {
          // OAuth tokens are one more Bearer kind; the oauth2 entry carries the route's scopes
          const oauth = (op.security as Record<string, string[]>[]).filter((s) => 'oauth2' in s);
          expect(oauth.length, route).toBeLessThanOrEqual(1);
          expect(
            (op.security as Record<string, string[]>[]).filter((s) => !('oauth2' in s)),
            route,
          ).toEqual(expected);
        }
      }
      for (const route of [
        'get /api/v1/auth/me',
        'post /api/v1/api-keys',
        'get /api/v1/api-keys',
        'get /api/v1/api-keys/{id}',
        'delete /api/v1/api-keys/{id}',
        'post /api/v1/users',
      ]) {
        const security = ops.find((o) => o.route === route)?.op.security as
          | Record<string, string[]>[]
          | undefined;
        expect(
          security?.filter((s) => !('oauth2' in s)),
          route,
        ).toEqual(expected);
      }
    } finally {
      await t.close();
    }
  });
});

describe('the limiter’s round trips', () => {
  it('costs one counter-store call for a request with a valid Bearer token or API key, two with a password', async () => {
    const t = await startApp({ RATE_LIMIT: '1000', AUTH_RATE_LIMIT: '10' });
    try {
      const u = await signUp(t.url);
      const key = await createApiKey(u.client);
      // count the calls each request makes to the counter store (each one is one Redis round trip)
      const store = t.app.get(RateLimitStore);
      let calls = 0;
      for (const method of ['hit', 'peek', 'addAll'] as const) {
        const original = store[method].bind(store) as (...args: unknown[]) => unknown;
        (store as unknown as Record<string, unknown>)[method] = (...args: unknown[]) => {
          calls += 1;
          return original(...args);
        };
      }
      const callsFor = async (auth: Parameters<typeof client>[1]) => {
        calls = 0;
        expect((await client(t.url, auth).get('/api/v1/auth/me')).status).toBe(200);
        return calls;
      };
      expect(await callsFor({ bearer: u.token })).toBe(1);
      expect(await callsFor({ apiKey: key.key })).toBe(1);
      expect(await callsFor({ basic: [u.email, u.password] })).toBe(2);
    } finally {
      await t.close();
    }
  });
});
