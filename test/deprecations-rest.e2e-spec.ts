import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApp, type TestApp } from './helpers/app.js';
import { adminClient, createApiKey } from './helpers/factories.js';
import { client } from './helpers/http.js';

/** RFC 9745 / RFC 8594: the deprecated `?api_key=` query parameter is announced on the wire. */
describe('REST deprecations: ?api_key=', () => {
  let t: TestApp;
  let key: string;

  beforeAll(async () => {
    t = await startApp();
    key = (await createApiKey(await adminClient(t.url))).key;
  });
  afterAll(() => t.close());

  it('a request authenticated with ?api_key= carries Deprecation (@unix seconds), Sunset and Link rel="deprecation"; the same key in X-API-Key carries none', async () => {
    const res = await client(t.url).get(`/api/v1/auth/me?api_key=${encodeURIComponent(key)}`);
    expect(res.status).toBe(200);
    expect(res.headers.get('deprecation')).toMatch(/^@\d+$/);
    expect(Number(res.headers.get('deprecation')!.slice(1))).toBe(
      Date.parse('2026-11-28T00:00:00Z') / 1000,
    );
    expect(res.headers.get('sunset')).toBe('Tue, 01 Jun 2027 00:00:00 GMT');
    expect(res.headers.get('link')).toMatch(/<[^>]+>; rel="deprecation"/);

    // the same request with the key in X-API-Key: no deprecation announced
    const header = await client(t.url, { apiKey: key }).get('/api/v1/auth/me');
    expect(header.status).toBe(200);
    expect(header.headers.get('deprecation')).toBeNull();
    expect(header.headers.get('sunset')).toBeNull();
    expect(header.headers.get('link') ?? '').not.toMatch(/deprecation/);
  });

  it('a list answer keeps its paging Link and adds the deprecation link to it', async () => {
    const res = await client(t.url).get(`/api/v1/users?limit=1&api_key=${encodeURIComponent(key)}`);
    expect(res.status).toBe(200);
    const link = res.headers.get('link') ?? '';
    expect(link).toMatch(/<http:\/\/atrium\.test\/api\/v1\/users\?[^>]*>; rel="(first|next|last)"/);
    expect(link).toMatch(/rel="deprecation"/);
    expect(res.headers.get('deprecation')).toMatch(/^@\d+$/);
  });

  it('a refused ?api_key= (wrong key, 401) is announced as deprecated too', async () => {
    const res = await client(t.url).get('/api/v1/auth/me?api_key=not-a-key');
    expect(res.status).toBe(401);
    expect(res.headers.get('deprecation')).toMatch(/^@\d+$/);
  });

  it('the OpenAPI document marks the api_key query parameter deprecated: true on authenticated operations', async () => {
    const doc = (await client(t.url).get('/api/docs-json')).body;
    expect(doc.components.parameters.ApiKeyQuery).toMatchObject({
      name: 'api_key',
      in: 'query',
      deprecated: true,
    });
    expect(doc.paths['/api/v1/auth/me'].get.parameters).toContainEqual({
      $ref: '#/components/parameters/ApiKeyQuery',
    });
  });
});
