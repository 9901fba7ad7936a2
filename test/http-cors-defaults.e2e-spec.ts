import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApp, type TestApp } from './helpers/app.js';
import { request } from './helpers/http.js';

const preflight = (origin: string, headers = 'content-type') => ({
  method: 'OPTIONS',
  headers: {
    origin,
    'access-control-request-method': 'POST',
    'access-control-request-headers': headers,
  },
});

const list = (value: string | null): string[] =>
  (value ?? '')
    .split(',')
    .map((h) => h.trim().toLowerCase())
    .filter((h) => h !== '');

describe('CORS defaults for local dev servers and Apollo clients', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startApp();
  });
  afterAll(async () => {
    await t.close();
  });

  it('allows http://127.0.0.1:<port> and http://[::1]:<port> dev servers with credentials by default', async () => {
    for (const origin of ['http://127.0.0.1:5173', 'http://[::1]:3001', 'http://localhost:8080']) {
      const res = await request(t.url, '/graphql', preflight(origin));
      expect(res.status, origin).toBe(200);
      expect(res.headers.get('access-control-allow-origin'), origin).toBe(origin);
      expect(res.headers.get('access-control-allow-credentials'), origin).toBe('true');
    }
    // Only plain http on those hosts: https or a look-alike name is not a loopback dev server.
    for (const origin of ['http://127.0.0.1.evil.example', 'https://127.0.0.1:5173']) {
      const res = await request(t.url, '/graphql', preflight(origin));
      expect(res.status, origin).toBe(204);
      expect(res.headers.get('access-control-allow-origin'), origin).toBeNull();
    }
  });

  it('lets browsers send x-apollo-operation-name (the CSRF alternative docs/graphql.md names)', async () => {
    const res = await request(
      t.url,
      '/graphql',
      preflight('https://studio.apollographql.com', 'content-type,x-apollo-operation-name'),
    );
    expect(res.status).toBe(200);
    expect(list(res.headers.get('access-control-allow-headers'))).toContain(
      'x-apollo-operation-name',
    );
  });

  it('exposes each response header once (Idempotent-Replayed not twice)', async () => {
    const res = await request(t.url, '/api/v1/users', {
      headers: { origin: 'http://localhost:5173' },
    });
    const exposed = list(res.headers.get('access-control-expose-headers'));
    expect(exposed).toContain('idempotent-replayed');
    expect(exposed.length).toBe(new Set(exposed).size);
  });
});
