import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApp, type TestApp } from './helpers/app.js';
import { adminClient, createUser } from './helpers/factories.js';
import { request, type Client } from './helpers/http.js';

/**
 * The shortcuts of the request path (docs/performance.md) answer exactly as the full path does:
 * requests without `Origin` skip @fastify/cors, first-party tokens are verified once and then taken
 * from the verified-token cache, and oidc-provider's request context is released between OAuth
 * requests.
 */
const ORIGIN = 'https://app.example';

let t: TestApp;
let admin: Client;

beforeAll(async () => {
  t = await startApp({ CORS_ORIGINS: ORIGIN });
  admin = await adminClient(t.url);
});

afterAll(async () => {
  await t.close();
});

/** Headers that differ between two answers to the same request by nature. */
const PER_REQUEST = new Set(['date', 'x-request-id', 'ratelimit-remaining', 'ratelimit-reset']);

function stableHeaders(headers: Headers): Record<string, string> {
  const out: Record<string, string> = {};
  headers.forEach((value, name) => {
    if (!PER_REQUEST.has(name) && !name.startsWith('access-control-')) {
      out[name] = value;
    }
  });
  return out;
}

describe('requests without Origin (no @fastify/cors on the way)', () => {
  it('answer like a browser request except for the CORS headers', async () => {
    const user = await createUser(t.url);
    const path = `/api/v1/users/${user.id}`;
    const plain = await user.client.get(path);
    const browser = await user.client.get(path, { headers: { origin: ORIGIN } });
    const stranger = await user.client.get(path, { headers: { origin: 'https://evil.example' } });

    for (const res of [plain, browser, stranger]) {
      expect(res.status).toBe(200);
      expect(res.text).toBe(plain.text);
      expect(res.headers.get('x-request-id')).toMatch(/./);
      expect(res.headers.get('ratelimit-limit')).toMatch(/^\d+$/);
    }
    expect(plain.headers.get('vary')).toBe(
      'Origin, Accept, Accept-Version, Authorization, X-API-Key',
    );
    expect(stableHeaders(browser.headers)).toEqual(stableHeaders(plain.headers));
    expect(stableHeaders(stranger.headers)).toEqual(stableHeaders(plain.headers));

    expect([...plain.headers.keys()].filter((h) => h.startsWith('access-control-'))).toEqual([]);
    expect([...stranger.headers.keys()].filter((h) => h.startsWith('access-control-'))).toEqual([]);
    expect(browser.headers.get('access-control-allow-origin')).toBe(ORIGIN);
    expect(browser.headers.get('access-control-allow-credentials')).toBe('true');

    // the conditional GET works the same way on both paths
    const etag = plain.headers.get('etag')!;
    const again = await user.client.get(path, { headers: { 'if-none-match': etag } });
    const againBrowser = await user.client.get(path, {
      headers: { 'if-none-match': etag, origin: ORIGIN },
    });
    expect(again.status).toBe(304);
    expect(againBrowser.status).toBe(304);
    expect(again.headers.get('vary')).toBe(plain.headers.get('vary'));
  });

  it('answer a preflight and an unrouted path as before', async () => {
    const preflight = await request(t.url, '/api/v1/users', {
      method: 'OPTIONS',
      headers: { origin: ORIGIN, 'access-control-request-method': 'POST' },
    });
    expect(preflight.status).toBe(200);
    expect(preflight.headers.get('access-control-allow-origin')).toBe(ORIGIN);

    const missing = await request(t.url, '/api/v1/nothing-here');
    expect(missing.status).toBe(404);
    expect(missing.headers.get('vary')).toBe('Origin');
    expect(missing.body).toMatchObject({ error: { code: 'not_found' } });
  });
});

describe('a cached verified token', () => {
  it('loses its rights at once when its user is demoted, and all access when deleted', async () => {
    const user = await createUser(t.url);
    const post = () => user.client.post('/api/v1/posts', { title: 'On the fast path', body: 'x' });
    // verified once (passport-jwt), then served from the cache
    expect((await user.client.get(`/api/v1/users/${user.id}`)).status).toBe(200);
    expect((await post()).status).toBe(201);
    expect((await post()).status).toBe(201);

    const demoted = await admin.patch(
      `/api/v1/users/${user.id}`,
      { role: 'GUEST' },
      { headers: { 'content-type': 'application/merge-patch+json' } },
    );
    expect(demoted.status, demoted.text).toBe(200);
    const refused = await post();
    expect(refused.status).toBe(403);
    expect(refused.body).toMatchObject({ error: { code: 'forbidden' } });
    // still a valid credential for what a guest may do
    expect((await user.client.get(`/api/v1/users/${user.id}`)).status).toBe(200);

    expect((await admin.delete(`/api/v1/users/${user.id}`)).status).toBe(204);
    const gone = await user.client.get(`/api/v1/users/${user.id}`);
    expect(gone.status).toBe(401);
    expect(gone.body).toMatchObject({ error: { code: 'unauthorized' } });
    const gql = await request(t.url, '/graphql', {
      method: 'POST',
      auth: { bearer: user.token },
      body: { query: '{ me { id } }' },
    });
    expect(gql.status).toBe(401);
    expect(gql.body.errors[0].extensions.code).toBe('UNAUTHENTICATED');
  });
});

describe("oidc-provider's request context", () => {
  it('is released once no OAuth request is in flight', async () => {
    // the storage oidc-provider runs each of its requests in (see src/auth/oauth/oidc-library.ts)
    const path = 'oidc-provider/lib/helpers/als.js';
    const { default: storage } = (await import(path)) as { default: { enabled?: boolean } };
    const discovery = await request(t.url, '/oauth/.well-known/openid-configuration');
    expect(discovery.status).toBe(200);
    expect(discovery.body.issuer).toMatch(/\/oauth$/);
    const together = await Promise.all(
      Array.from({ length: 5 }, () => request(t.url, '/oauth/jwks')),
    );
    expect(together.map((r) => r.status)).toEqual([200, 200, 200, 200, 200]);
    // Node 20 keeps promise hooks on while a storage is enabled (later versions have no `enabled`)
    expect(storage.enabled ?? false).toBe(false);
    // and the next request runs in its context again
    expect((await request(t.url, '/oauth/.well-known/openid-configuration')).status).toBe(200);
    expect(storage.enabled ?? false).toBe(false);
  });
});
