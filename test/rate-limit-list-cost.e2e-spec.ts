import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApp, startPair, usingRedis, type TestApp } from './helpers/app.js';
import { adminClient } from './helpers/factories.js';
import { client, type Client } from './helpers/http.js';
import { rateHeaders, signUp } from './helpers/rate-limit.js';

/** A row's cost: 1 + 1 per member, `body` 20 (Post: id, author_id, title, body, created_at, updated_at). */
const POST_ROW = 1 + 5 + 20;
/** User: id, name, email, role, age, created_at, updated_at. */
const USER_ROW = 1 + 7;
const page = (limit: number, row: number) => 1 + limit * row;

const gql = (c: Client, query: string) => c.post('/graphql', { query });

async function writePosts(c: Client, n: number): Promise<void> {
  for (let i = 0; i < n; i++) {
    const res = await c.post('/api/v1/posts', { title: `Post ${i}`, body: 'x'.repeat(2_000) });
    expect(res.status).toBe(201);
  }
}

describe('REST list cost (docs/rate-limits.md "List cost")', () => {
  describe('with a small budget', () => {
    const BUDGET = 600;
    let t: TestApp;
    beforeAll(async () => {
      // the test helper raises every budget: this one is set low on purpose
      t = await startApp({ GRAPHQL_COST_BUDGET: String(BUDGET), GRAPHQL_COST_WINDOW_S: '60' });
      await writePosts(await adminClient(t.url), 12);
    });
    afterAll(async () => {
      await t?.close();
    });

    it('charges each page by its limit and refuses the page that does not fit with 429', async () => {
      const u = await signUp(t.url);
      for (let i = 1; i <= 2; i++) {
        const ok = await u.client.get('/api/v1/posts?limit=10');
        expect(ok.status).toBe(200);
        expect(ok.body.data).toHaveLength(10);
        expect(ok.headers.get('ratelimit-cost-remaining')).toBe(
          String(BUDGET - i * page(10, POST_ROW)),
        );
      }
      // 2 x 261 spent, 78 left: a third page of 10 (261) does not fit
      const refused = await u.client.get('/api/v1/posts?limit=10', {
        headers: { origin: 'http://localhost:5173' },
      });
      expect(refused.status).toBe(429);
      expect(refused.body).toEqual({
        error: {
          code: 'rate_limited',
          message: `Cost budget exhausted: this page (limit 10) costs ${page(10, POST_ROW)} points, ${BUDGET - 2 * page(10, POST_ROW)} of ${BUDGET} are left; retry in ${rateHeaders(refused).retryAfter} s`,
        },
      });
      const h = rateHeaders(refused);
      expect(h.retryAfter).toBeGreaterThan(50);
      expect(h.retryAfter).toBeLessThanOrEqual(60);
      // the request bucket's headers, as on every /api response; Retry-After readable by a browser
      expect(h.limit).toBe(1_000_000);
      expect(refused.headers.get('ratelimit-cost-remaining')).toBe(
        String(BUDGET - 2 * page(10, POST_ROW)),
      );
      const exposed = refused.headers.get('access-control-expose-headers') ?? '';
      expect(exposed).toMatch(/Retry-After/i);
      expect(exposed).toMatch(/RateLimit-Cost-Remaining/i);
      // a refused page spends nothing: a page of 2 (53) still fits in the 78 left
      const small = await u.client.get('/api/v1/posts?limit=2');
      expect(small.status).toBe(200);
      expect(small.body.data).toHaveLength(2);
      // and one more of 1 (27) no longer does (78 - 53 = 25)
      expect((await u.client.get('/api/v1/posts?limit=1')).status).toBe(429);
      // reads that are not lists cost no points (and do not carry the header)
      const one = await u.client.get(`/api/v1/posts/${small.body.data[0].id}`);
      expect(one.status).toBe(200);
      expect(one.headers.get('ratelimit-cost-remaining')).toBeNull();
    });

    it('is the GraphQL cost budget: points spent on one transport are gone on the other', async () => {
      const u = await signUp(t.url);
      const rest = await u.client.get('/api/v1/users?limit=20');
      expect(rest.status).toBe(200);
      const me = await gql(u.client, '{ me { id } }');
      expect(me.status).toBe(200);
      expect(me.body.extensions.cost).toMatchObject({
        requested: 2,
        budget: BUDGET,
        remaining: BUDGET - page(20, USER_ROW) - 2,
      });
      // spend most of the rest in GraphQL, then REST is refused
      const gqlPosts = await gql(u.client, '{ posts(first: 12) { id title body } }');
      expect(gqlPosts.status).toBe(200);
      const left = gqlPosts.body.extensions.cost.remaining as number;
      expect(left).toBeLessThan(page(10, POST_ROW));
      const refused = await u.client.get('/api/v1/posts?limit=10');
      expect(refused.status).toBe(429);
      expect(refused.body.error.code).toBe('rate_limited');
    });

    it('each identity has its own budget; an invalid limit is a 400 that spends nothing', async () => {
      const a = await signUp(t.url);
      const b = await signUp(t.url);
      expect((await a.client.get('/api/v1/posts?limit=20')).status).toBe(200); // 521
      expect((await a.client.get('/api/v1/posts?limit=5')).status).toBe(429);
      expect((await b.client.get('/api/v1/posts?limit=20')).status).toBe(200);
      const bad = await b.client.get('/api/v1/posts?limit=101');
      expect(bad.status).toBe(400);
      const cost = await gql(b.client, '{ me { id } }');
      expect(cost.body.extensions.cost.remaining).toBe(BUDGET - page(20, POST_ROW) - 2);
    });
  });

  describe('at the default budget', () => {
    let t: TestApp;
    beforeAll(async () => {
      t = await startApp({ GRAPHQL_COST_BUDGET: '10000', GRAPHQL_COST_WINDOW_S: '60' });
      await writePosts(await adminClient(t.url), 3);
    });
    afterAll(async () => {
      await t?.close();
    });

    it('an admin dashboard paging 20 at a time is never refused', async () => {
      const admin = await adminClient(t.url);
      const lists = ['/api/v1/users', '/api/v1/posts', '/api/v1/rooms', '/api/v1/api-keys'];
      for (const list of lists) {
        expect((await admin.get(`${list}?limit=20`)).status).toBe(200);
      }
      for (let p = 1; p <= 25; p++) {
        const res = await admin.get(`/api/v1/users?limit=20&page=${p}`);
        expect(res.status, `users page ${p}`).toBe(200);
      }
      for (let p = 1; p <= 5; p++) {
        const res = await admin.get(`/api/v1/posts?limit=20&page=${p}`);
        expect(res.status, `posts page ${p}`).toBe(200);
      }
    });

    it('caps pages of 100 posts at three per window (was 300)', async () => {
      const u = await signUp(t.url);
      for (let i = 0; i < 3; i++) {
        expect((await u.client.get('/api/v1/posts?limit=100')).status).toBe(200);
      }
      // 3 x 2601 = 7803 spent, 2197 left
      const refused = await u.client.get('/api/v1/posts?limit=100');
      expect(refused.status).toBe(429);
      expect(refused.body.error.message).toContain(
        `costs ${page(100, POST_ROW)} points, 2197 of 10000`,
      );
    });
  });

  describe.skipIf(!usingRedis)(
    'two instances sharing Redis (skipped: REDIS_URL is not set)',
    () => {
      let a: TestApp;
      let b: TestApp;
      let pair: Awaited<ReturnType<typeof startPair>> | undefined;
      beforeAll(async () => {
        pair = await startPair({ GRAPHQL_COST_BUDGET: '600', GRAPHQL_COST_WINDOW_S: '60' });
        ({ a, b } = pair);
      });
      afterAll(() => pair?.close());

      it('a page spent on one instance is spent on the other', async () => {
        const u = await signUp(a.url);
        expect((await u.client.get('/api/v1/users?limit=50')).status).toBe(200); // 401 of 600
        const refused = await client(b.url, { bearer: u.token }).get('/api/v1/users?limit=50');
        expect(refused.status).toBe(429);
        expect(refused.body.error.message).toContain(`${600 - page(50, USER_ROW)} of 600 are left`);
      });
    },
  );
});
