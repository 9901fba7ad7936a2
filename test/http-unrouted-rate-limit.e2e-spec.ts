import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApp, type TestApp } from './helpers/app.js';
import { request } from './helpers/http.js';
import { rateHeaders } from './helpers/rate-limit.js';

let nextIp = 1;
/** A client address of its own per test (the app trusts 127.0.0.1 as a proxy). */
const freshIp = () => `10.77.0.${nextIp++}`;

describe('requests to unknown /api/ paths count against the request bucket', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startApp({
      RATE_LIMIT: '3',
      RATE_LIMIT_WINDOW_S: '30',
      TRUSTED_PROXIES: '127.0.0.1',
    });
  });
  afterAll(async () => {
    await t.close();
  });

  it('answers 404s with RateLimit-* headers, then 429 with Retry-After, for routes too', async () => {
    const headers = { 'x-forwarded-for': freshIp() };
    for (let i = 0; i < 3; i++) {
      const res = await request(t.url, `/api/v1/no-such-thing/${i}`, { headers });
      expect(res.status).toBe(404);
      expect(res.body.error.code).toBe('not_found');
      expect(rateHeaders(res)).toMatchObject({ limit: 3, remaining: 2 - i });
    }
    const refused = await request(t.url, '/api/v1/no-such-thing', { headers });
    expect(refused.status).toBe(429);
    expect(refused.body.error.code).toBe('rate_limited');
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
    // the same bucket as every other request of that client
    expect((await request(t.url, '/api/v1/auth/me', { headers })).status).toBe(429);
    // another client is not affected
    const other = await request(t.url, '/api/v1/no-such-thing', {
      headers: { 'x-forwarded-for': freshIp() },
    });
    expect(other.status).toBe(404);
  });

  it('counts 405s for known paths with an unserved method', async () => {
    const headers = { 'x-forwarded-for': freshIp() };
    const statuses: number[] = [];
    for (let i = 0; i < 4; i++) {
      statuses.push(
        (await request(t.url, '/api/v1/auth/me', { method: 'DELETE', headers })).status,
      );
    }
    expect(statuses).toEqual([405, 405, 405, 429]);
  });

  it('shares the bucket with routed requests (routed first, then unknown)', async () => {
    const headers = { 'x-forwarded-for': freshIp() };
    for (let i = 0; i < 3; i++) {
      expect((await request(t.url, '/api/v1/auth/me', { headers })).status).toBe(401);
    }
    expect((await request(t.url, '/api/v1/no-such-thing', { headers })).status).toBe(429);
  });

  it('does not count paths outside /api/', async () => {
    const headers = { 'x-forwarded-for': freshIp() };
    for (let i = 0; i < 5; i++) {
      const res = await request(t.url, '/no-such-thing', { headers });
      expect(res.status).toBe(404);
      expect(res.headers.get('ratelimit-limit')).toBeNull();
    }
  });
});
