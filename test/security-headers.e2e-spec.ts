import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApp, type TestApp } from './helpers/app.js';
import { tokenFor } from './helpers/factories.js';
import { ADMIN_EMAIL, ADMIN_PASSWORD } from './helpers/app.js';

// docs/contract.md section 5, "Security headers": JSON answers carry the OWASP REST Security Cheat
// Sheet's API headers and none of the document-only ones; HTML pages get helmet's full set.

const API_HEADERS = {
  'content-security-policy': "frame-ancestors 'none'",
  'strict-transport-security': 'max-age=31536000; includeSubDomains',
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
};
const DOCUMENT_ONLY = [
  'cross-origin-opener-policy',
  'cross-origin-resource-policy',
  'origin-agent-cluster',
  'referrer-policy',
  'x-dns-prefetch-control',
  'x-download-options',
  'x-permitted-cross-domain-policies',
  'x-xss-protection',
];

function expectApiHeaders(res: Response, cacheControl: string): void {
  for (const [name, value] of Object.entries(API_HEADERS)) {
    expect(res.headers.get(name), name).toBe(value);
  }
  expect(res.headers.get('cache-control')).toBe(cacheControl);
  expect(res.headers.get('content-type')).toMatch(/json/);
  for (const name of DOCUMENT_ONLY) {
    expect(res.headers.get(name), name).toBeNull();
  }
}

describe('security headers', () => {
  let t: TestApp;
  let auth: Record<string, string>;

  beforeAll(async () => {
    t = await startApp({ GRAPHQL_DEVELOPMENT: 'true' });
    auth = { authorization: `Bearer ${await tokenFor(t.url, ADMIN_EMAIL, ADMIN_PASSWORD)}` };
  });
  afterAll(() => t?.close());

  it('a JSON GET carries the API set, its own caching and no document-only header', async () => {
    const me = await fetch(`${t.url}/api/v1/auth/me`, { headers: auth });
    expect(me.status).toBe(200);
    const { data } = (await me.json()) as { data: { id: string } };
    const res = await fetch(`${t.url}/api/v1/users/${data.id}`, { headers: auth });
    expect(res.status).toBe(200);
    expectApiHeaders(res, 'private, no-cache');
  });

  it('JSON errors and writes carry the API set with Cache-Control: no-store', async () => {
    const missing = await fetch(`${t.url}/api/v1/users/usr_00000000000000000000000000`, {
      headers: auth,
    });
    expect(missing.status).toBe(404);
    expectApiHeaders(missing, 'no-store');
    const anonymous = await fetch(`${t.url}/api/v1/users`);
    expect(anonymous.status).toBe(401);
    expectApiHeaders(anonymous, 'no-store');
    const created = await fetch(`${t.url}/api/v1/posts`, {
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/json' },
      body: JSON.stringify({ title: 'headers', body: 'of a write' }),
    });
    expect(created.status).toBe(201);
    expectApiHeaders(created, 'no-store');
    const unrouted = await fetch(`${t.url}/api/v1/nothing-here`, { headers: auth });
    expect(unrouted.status).toBe(404);
    expectApiHeaders(unrouted, 'no-store');
  });

  it('a GraphQL answer carries the API set', async () => {
    const res = await fetch(`${t.url}/graphql`, {
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/json' },
      body: JSON.stringify({ query: '{ me { id } }' }),
    });
    expect(res.status).toBe(200);
    expectApiHeaders(res, 'no-store');
  });

  it("Swagger UI's page gets helmet's full set with the page policy", async () => {
    const res = await fetch(`${t.url}/api/docs`, { headers: { accept: 'text/html' } });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/html/);
    const csp = res.headers.get('content-security-policy') ?? '';
    expect(csp).toContain("default-src 'self'");
    expect(csp).toContain("frame-ancestors 'self'");
    expect(res.headers.get('x-frame-options')).toBe('SAMEORIGIN');
    expect(res.headers.get('strict-transport-security')).toBe(
      API_HEADERS['strict-transport-security'],
    );
    expect(res.headers.get('x-content-type-options')).toBe('nosniff');
    for (const name of DOCUMENT_ONLY) {
      expect(res.headers.get(name), name).not.toBeNull();
    }
  });

  it('the GraphQL IDE page keeps its own policy and gets the document headers it lacks', async () => {
    const res = await fetch(`${t.url}/graphql`, { headers: { accept: 'text/html' } });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/html/);
    const csp = res.headers.get('content-security-policy') ?? '';
    expect(csp).not.toBe(API_HEADERS['content-security-policy']);
    expect(csp).toContain('script-src');
    expect(res.headers.get('cross-origin-opener-policy')).toBe('same-origin');
    expect(res.headers.get('x-dns-prefetch-control')).toBe('off');
  });
});
