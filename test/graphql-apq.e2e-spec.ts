import { createHash } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApp, startPair, type TestApp } from './helpers/app.js';
import { createUser, unique, type CreatedUser } from './helpers/factories.js';
import { request, type TestResponse } from './helpers/http.js';
import {
  privateRedisTestsRun,
  startPrivateRedis,
  type PrivateRedis,
} from './helpers/private-redis.js';
import type { GqlBody } from './graphql-client.js';

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');
const persisted = (hash: string) => ({ persistedQuery: { version: 1, sha256Hash: hash } });

/** GET /graphql by hash only (what a CDN can cache), with a Bearer token. */
function getByHash(base: string, hash: string, token: string): Promise<TestResponse<GqlBody>> {
  const params = new URLSearchParams({ extensions: JSON.stringify(persisted(hash)) });
  return request<GqlBody>(base, `/graphql?${params.toString()}`, {
    method: 'GET',
    auth: { bearer: token },
  });
}

/** POST with the text and its hash: registers the hash (Apollo's second APQ round trip). */
function register(base: string, query: string, token: string): Promise<TestResponse<GqlBody>> {
  return request<GqlBody>(base, '/graphql', {
    method: 'POST',
    auth: { bearer: token },
    body: { query, extensions: persisted(sha256(query)) },
  });
}

describe('automatic persisted queries (APQ)', () => {
  let t: TestApp;
  let user: CreatedUser;

  beforeAll(async () => {
    t = await startApp({ REDIS_URL: '' });
    user = await createUser(t.url);
  });
  afterAll(async () => {
    await t?.close();
  });

  it('answers PERSISTED_QUERY_NOT_FOUND for an unknown hash, by GET and by POST', async () => {
    const hash = sha256(`{ me { id } } # ${unique()}`);
    const get = await getByHash(t.url, hash, user.token);
    expect(get.status).toBe(200);
    expect(get.body.errors?.[0]?.extensions?.code).toBe('PERSISTED_QUERY_NOT_FOUND');
    expect(get.body.data).toBeUndefined();
    const post = await request<GqlBody>(t.url, '/graphql', {
      method: 'POST',
      auth: { bearer: user.token },
      body: { extensions: persisted(hash) },
    });
    expect(post.body.errors?.[0]?.extensions?.code).toBe('PERSISTED_QUERY_NOT_FOUND');
  });

  it('runs a registered hash by GET with the Cache-Control its @cacheControl hints allow', async () => {
    const post = await user.client.post('/api/v1/posts', { title: 'cached', body: 'text' });
    expect(post.status).toBe(201);
    const query = `{ post(id: "${post.body.data.id}") { id title } }`;
    const first = await register(t.url, query, user.token);
    expect(first.body.errors).toBeUndefined();
    const byHash = await getByHash(t.url, sha256(query), user.token);
    expect(byHash.status).toBe(200);
    expect(byHash.body).toMatchObject({
      data: { post: { id: post.body.data.id, title: 'cached' } },
    });
    // Post carries @cacheControl(maxAge: 60); an authenticated answer is never public
    expect(byHash.headers.get('cache-control')).toBe('max-age=60, private');

    const me = `{ me { id } } # ${unique()}`;
    expect((await register(t.url, me, user.token)).body.errors).toBeUndefined();
    const meByHash = await getByHash(t.url, sha256(me), user.token);
    expect(meByHash.body.data).toEqual({ me: { id: user.id } });
    expect(meByHash.headers.get('cache-control')).toBe('no-store');
  });

  it('refuses a text whose hash does not match (400, nothing registered)', async () => {
    const query = `{ me { id } } # ${unique()}`;
    const wrong = sha256(`${query} `);
    const res = await request<GqlBody>(t.url, '/graphql', {
      method: 'POST',
      auth: { bearer: user.token },
      body: { query, extensions: persisted(wrong) },
    });
    expect(res.status).toBe(400);
    expect(res.body.data).toBeUndefined();
    const again = await getByHash(t.url, wrong, user.token);
    expect(again.body.errors?.[0]?.extensions?.code).toBe('PERSISTED_QUERY_NOT_FOUND');
  });

  it('keeps hashes per instance without Redis', async () => {
    const pair = await startPair({ REDIS_URL: '' });
    try {
      const u = await createUser(pair.a.url);
      const query = `{ me { id } } # ${unique()}`;
      expect((await register(pair.a.url, query, u.token)).body.errors).toBeUndefined();
      expect((await getByHash(pair.a.url, sha256(query), u.token)).body.data).toEqual({
        me: { id: u.id },
      });
      const other = await getByHash(pair.b.url, sha256(query), u.token);
      expect(other.body.errors?.[0]?.extensions?.code).toBe('PERSISTED_QUERY_NOT_FOUND');
    } finally {
      await pair.close();
    }
  });
});

describe.runIf(Boolean(process.env.REDIS_URL) || privateRedisTestsRun)(
  'APQ across instances (Redis)',
  () => {
    let redis: PrivateRedis | undefined;
    let redisUrl: string;
    let pair: Awaited<ReturnType<typeof startPair>>;
    const prefix = `atrium-test:${unique('apq')}:`;

    beforeAll(async () => {
      if (process.env.REDIS_URL) {
        redisUrl = process.env.REDIS_URL;
      } else {
        redis = await startPrivateRedis();
        redisUrl = redis.url;
      }
      pair = await startPair({ REDIS_URL: redisUrl, REDIS_PREFIX: prefix });
    });
    afterAll(async () => {
      await pair?.close();
      await redis?.kill();
    });

    it('runs on instance B a hash registered through instance A, stored under REDIS_PREFIX', async () => {
      const u = await createUser(pair.a.url);
      const query = `{ me { id name } } # ${unique()}`;
      const hash = sha256(query);
      expect((await getByHash(pair.b.url, hash, u.token)).body.errors?.[0]?.extensions?.code).toBe(
        'PERSISTED_QUERY_NOT_FOUND',
      );
      expect((await register(pair.a.url, query, u.token)).body.errors).toBeUndefined();
      const onB = await getByHash(pair.b.url, hash, u.token);
      expect(onB.status).toBe(200);
      expect(onB.body.data).toEqual({ me: { id: u.id, name: expect.any(String) } });

      const client = new Redis(redisUrl);
      try {
        expect(await client.get(`${prefix}apq:${hash}`)).toContain(query.slice(0, 10));
        const ttl = await client.ttl(`${prefix}apq:${hash}`);
        expect(ttl).toBeGreaterThan(0);
        expect(ttl).toBeLessThanOrEqual(86_400);
      } finally {
        client.disconnect();
      }
    });
  },
);
