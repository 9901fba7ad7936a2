import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApp, type TestApp } from './helpers/app.js';
import { request, type Client } from './helpers/http.js';
import { rateHeaders, signUp } from './helpers/rate-limit.js';

const CHEAP = '{ me { id } }';
const EXPENSIVE = '{ users(first: 50) { edges { node { id name } } } }';

const gql = (c: Client, query: string) => c.post('/graphql', { query });

describe('GraphQL cost budget', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startApp({ GRAPHQL_COST_BUDGET: '250', GRAPHQL_COST_WINDOW_S: '30' });
  });
  afterAll(async () => {
    await t.close();
  });

  it('reports requested, remaining and resetAt in extensions.cost; an expensive query spends more', async () => {
    const u = await signUp(t.url);
    const cheap = await gql(u.client, CHEAP);
    expect(cheap.status).toBe(200);
    const c1 = cheap.body.extensions.cost;
    expect(c1).toMatchObject({
      requested: expect.any(Number),
      budget: 250,
      remaining: 250 - c1.requested,
    });
    expect(Date.parse(c1.resetAt) - Date.now()).toBeGreaterThan(25_000);
    expect(Date.parse(c1.resetAt) - Date.now()).toBeLessThanOrEqual(31_000);

    const expensive = await gql(u.client, EXPENSIVE);
    expect(expensive.status).toBe(200);
    const c2 = expensive.body.extensions.cost;
    expect(c2.requested).toBeGreaterThan(c1.requested * 10);
    expect(c2.remaining).toBe(c1.remaining - c2.requested);
    expect(c1.remaining - c2.remaining).toBeGreaterThan(250 - c1.remaining);
    expect(Math.abs(Date.parse(c2.resetAt) - Date.parse(c1.resetAt))).toBeLessThanOrEqual(1000); // the same window
  });

  it('answers HTTP 429 RATE_LIMITED over budget, spends nothing on the refusal, and keeps budgets per identity', async () => {
    const [u, other] = await Promise.all([signUp(t.url), signUp(t.url)]);
    let last = await gql(u.client, EXPENSIVE);
    let remaining = 250;
    while (last.status === 200) {
      remaining = last.body.extensions.cost.remaining;
      last = await gql(u.client, EXPENSIVE);
    }
    expect(last.status).toBe(429);
    expect(last.body.errors[0].extensions.code).toBe('RATE_LIMITED');
    expect(last.body.errors[0].message).toMatch(/budget/);
    expect(last.body.data).toBeUndefined();
    expect(rateHeaders(last).retryAfter).toBeGreaterThanOrEqual(1);
    expect(rateHeaders(last).retryAfter).toBeLessThanOrEqual(30);
    expect(last.body.extensions.cost).toMatchObject({ remaining });

    // a cheap query still fits in what is left
    const cheap = await gql(u.client, CHEAP);
    expect(cheap.status).toBe(200);
    expect(cheap.body.extensions.cost.remaining).toBe(
      remaining - cheap.body.extensions.cost.requested,
    );

    // another identity has its own budget
    const fresh = await gql(other.client, EXPENSIVE);
    expect(fresh.status).toBe(200);
    expect(fresh.body.extensions.cost.remaining).toBe(250 - fresh.body.extensions.cost.requested);
  });
});

describe('GraphQL request limit', () => {
  let t: TestApp;
  beforeAll(async () => {
    // 127.0.0.1 is trusted: each test speaks from its own forwarded client address
    t = await startApp({
      RATE_LIMIT: '3',
      RATE_LIMIT_WINDOW_S: '30',
      TRUSTED_PROXIES: '127.0.0.1',
    });
  });
  afterAll(async () => {
    await t.close();
  });

  it('counts GraphQL requests in the identity’s request bucket (shared with REST), with headers and 429', async () => {
    const u = await signUp(t.url);
    expect(rateHeaders(await u.client.get('/api/v1/auth/me')).remaining).toBe(2);
    const first = await gql(u.client, CHEAP);
    expect(first.status).toBe(200);
    expect(rateHeaders(first)).toMatchObject({ limit: 3, remaining: 1 });
    expect(rateHeaders(await gql(u.client, CHEAP)).remaining).toBe(0);
    const refused = await gql(u.client, CHEAP);
    expect(refused.status).toBe(429);
    expect(refused.body.errors[0].extensions.code).toBe('RATE_LIMITED');
    expect(rateHeaders(refused)).toMatchObject({ limit: 3, remaining: 0 });
    expect(rateHeaders(refused).retryAfter).toBeGreaterThanOrEqual(1);
    expect((await u.client.get('/api/v1/auth/me')).status).toBe(429);
  });

  it('counts anonymous GraphQL requests by client address', async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 4; i++) {
      const res = await request(t.url, '/graphql', {
        method: 'POST',
        body: { query: '{ __typename }' },
        headers: { 'x-forwarded-for': '10.6.0.9' },
      });
      statuses.push(res.status);
    }
    expect(statuses).toEqual([200, 200, 200, 429]);
  });
});

describe('GraphQL failed credentials', () => {
  it('count against the address’s auth bucket; over it, wrong credentials get 429 RATE_LIMITED and valid ones pass', async () => {
    const t = await startApp({
      AUTH_RATE_LIMIT: '2',
      AUTH_RATE_LIMIT_WINDOW_S: '30',
      TRUSTED_PROXIES: '127.0.0.1',
    });
    try {
      const u = await signUp(t.url, '10.5.0.1');
      const ask = (ip: string, authorization: string) =>
        request(t.url, '/graphql', {
          method: 'POST',
          body: { query: CHEAP },
          headers: { authorization, 'x-forwarded-for': ip },
        });
      expect((await ask('10.5.0.2', 'Bearer not.a.jwt')).status).toBe(401);
      expect((await ask('10.5.0.2', 'Bearer still.not.a.jwt')).status).toBe(401);
      const refused = await ask('10.5.0.2', 'Bearer again.not.a.jwt');
      expect(refused.status).toBe(429);
      expect(refused.body.errors[0].extensions.code).toBe('RATE_LIMITED');
      expect(rateHeaders(refused)).toMatchObject({ limit: 2, remaining: 0 });
      expect(rateHeaders(refused).retryAfter).toBeGreaterThanOrEqual(1);
      // REST shares the bucket; valid credentials from that address are still served
      expect(
        (
          await request(t.url, '/api/v1/auth/me', {
            headers: { authorization: 'Bearer not.a.jwt', 'x-forwarded-for': '10.5.0.2' },
          })
        ).status,
      ).toBe(429);
      expect((await ask('10.5.0.2', `Bearer ${u.token}`)).status).toBe(200);
    } finally {
      await t.close();
    }
  });
});
