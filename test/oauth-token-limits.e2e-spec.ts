import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApp, startPair, usingRedis, type TestApp } from './helpers/app.js';
import { adminClient, createUser, type CreatedUser } from './helpers/factories.js';
import type { Client } from './helpers/http.js';
import {
  authorize,
  exchangeCode,
  registerClient,
  tokenRequest,
  type RegisteredClient,
} from './helpers/oauth.js';

/** A token request as a partner server behind one address sends it (`X-Forwarded-For` trusted). */
async function tokenFrom(
  base: string,
  client: RegisteredClient,
  form: Record<string, string>,
  from: string,
  secret = client.client_secret,
) {
  const res = await fetch(`${base}/oauth/token`, {
    method: 'POST',
    headers: {
      authorization: `Basic ${Buffer.from(`${client.client_id}:${secret}`).toString('base64')}`,
      'content-type': 'application/x-www-form-urlencoded',
      'x-forwarded-for': from,
    },
    body: new URLSearchParams(form).toString(),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined, headers: res.headers };
}

async function offlineTokens(base: string, client: RegisteredClient, user: CreatedUser) {
  const { redirect, verifier } = await authorize(base, {
    client,
    email: user.email,
    password: user.password,
    scope: 'openid offline_access users:read',
    prompt: 'consent',
  });
  const res = await exchangeCode(base, client, redirect.searchParams.get('code')!, verifier);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body as { access_token: string; refresh_token: string };
}

describe('/oauth/token limits', () => {
  let t: TestApp;
  let admin: Client;
  let partner: RegisteredClient;
  let other: RegisteredClient;
  let user: CreatedUser;

  beforeAll(async () => {
    t = await startApp({
      AUTH_RATE_LIMIT: '3',
      OAUTH_TOKEN_RATE_LIMIT: '14',
      TRUSTED_PROXIES: '127.0.0.1',
    });
    admin = await adminClient(t.url);
    partner = await registerClient(admin, { name: 'Busy partner' });
    other = await registerClient(admin, { name: 'Quiet partner' });
    user = await createUser(t.url);
  });
  afterAll(() => t?.close());

  it('valid token requests never spend the address credential bucket; the client budget refuses past OAUTH_TOKEN_RATE_LIMIT', async () => {
    const from = '203.0.113.40';
    let { refresh_token } = await offlineTokens(t.url, partner, user);
    // the code exchange above was one of the client's 14; 12 refreshes from one address (4x its
    // AUTH_RATE_LIMIT of 3) all succeed and carry the client's budget in RateLimit-*
    for (let i = 0; i < 12; i++) {
      const res = await tokenFrom(
        t.url,
        partner,
        { grant_type: 'refresh_token', refresh_token },
        from,
      );
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      expect(res.headers.get('ratelimit-limit')).toBe('14');
      expect(Number(res.headers.get('ratelimit-remaining'))).toBe(14 - 2 - i);
      refresh_token = res.body.refresh_token;
    }
    // a wrong password from that address is still answered 401 (its credential bucket is untouched)
    const password = await fetch(`${t.url}/api/v1/auth/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-forwarded-for': from },
      body: JSON.stringify({ email: user.email, password: 'not-the-password-1' }),
    });
    expect(password.status).toBe(401);
    // the 14th request is allowed, the 15th refused before the provider sees it: the refresh
    // token it carries is not spent
    const last = await tokenFrom(
      t.url,
      partner,
      { grant_type: 'refresh_token', refresh_token },
      from,
    );
    expect(last.status).toBe(200);
    refresh_token = last.body.refresh_token;
    const refused = await tokenFrom(
      t.url,
      partner,
      { grant_type: 'refresh_token', refresh_token },
      '203.0.113.41',
    );
    expect(refused.status).toBe(429);
    expect(refused.body.error).toBe('rate_limited');
    expect(refused.headers.get('retry-after')).toMatch(/^\d+$/);
    expect(refused.headers.get('cache-control')).toBe('no-store');
    // another client is not affected
    const theirs = await offlineTokens(t.url, other, user);
    expect(theirs.refresh_token).toBeTruthy();
  });

  it('failed client authentication counts per address and per client; a right secret still works', async () => {
    const victim = await registerClient(admin, { name: 'Targeted partner' });
    const form = { grant_type: 'refresh_token', refresh_token: 'nope' };
    // a spray of wrong secrets for one client from many addresses: the client's failure bucket
    // (AUTH_RATE_LIMIT 3) refuses the 4th whatever its address
    const statuses: number[] = [];
    for (let i = 0; i < 5; i++) {
      const res = await tokenFrom(t.url, victim, form, `198.51.100.${60 + i}`, `wrong-${i}`);
      statuses.push(res.status);
      if (res.status === 401) {
        expect(res.body.error).toBe('invalid_client');
      }
    }
    expect(statuses).toEqual([401, 401, 401, 429, 429]);
    // the client's right secret still authenticates (invalid_grant: its refresh token is made up)
    const right = await tokenFrom(t.url, victim, form, '198.51.100.70');
    expect(right.status).toBe(400);
    expect(right.body.error).toBe('invalid_grant');
    // per address: 4 failures for 4 different clients from one address, the 4th refused
    const from = '198.51.100.80';
    const byAddress: number[] = [];
    for (let i = 0; i < 4; i++) {
      const client = await registerClient(admin, { name: `Sprayed ${i}` });
      byAddress.push((await tokenFrom(t.url, client, form, from, 'wrong')).status);
    }
    expect(byAddress).toEqual([401, 401, 401, 429]);
    // and it is the credential bucket of passwords too
    const password = await fetch(`${t.url}/api/v1/auth/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-forwarded-for': from },
      body: JSON.stringify({ email: user.email, password: 'not-the-password-1' }),
    });
    expect(password.status).toBe(429);
    // an unrelated public client's request without any secret is answered by the provider
    const none = await tokenRequest(t.url, { ...other, client_secret: undefined }, form);
    expect(none.status).toBe(401);
  });
});

describe.skipIf(!usingRedis)(
  `the per-client token budget across two instances (Redis)${usingRedis ? '' : ' (skipped: REDIS_URL is not set)'}`,
  () => {
    let pair: { a: TestApp; b: TestApp; close(): Promise<void> };

    beforeAll(async () => {
      pair = await startPair({ OAUTH_TOKEN_RATE_LIMIT: '6', AUTH_RATE_LIMIT: '2' });
    });
    afterAll(() => pair?.close());

    it('is one budget whichever instance answers; never the address credential bucket', async () => {
      const partner = await registerClient(await adminClient(pair.a.url));
      const user = await createUser(pair.a.url);
      let { refresh_token } = await offlineTokens(pair.a.url, partner, user);
      // the exchange above was 1 of 6; 5 refreshes alternate between the instances
      for (let i = 0; i < 5; i++) {
        const base = i % 2 ? pair.a.url : pair.b.url;
        const res = await tokenRequest(base, partner, {
          grant_type: 'refresh_token',
          refresh_token,
        });
        expect(res.status, JSON.stringify(res.body)).toBe(200);
        refresh_token = res.body.refresh_token;
      }
      for (const base of [pair.a.url, pair.b.url]) {
        const refused = await tokenRequest(base, partner, {
          grant_type: 'refresh_token',
          refresh_token,
        });
        expect(refused.status).toBe(429);
        expect(refused.body.error).toBe('rate_limited');
      }
    });
  },
);
