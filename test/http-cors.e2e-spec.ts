import { request as httpRequest } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApp, type TestApp } from './helpers/app.js';
import { request } from './helpers/http.js';

/** Status of a WebSocket upgrade request on /graphql from `origin` (101 accepted, 403 refused). */
function upgradeStatus(base: string, origin: string): Promise<number> {
  const { port } = new URL(base);
  return new Promise((resolve, reject) => {
    const req = httpRequest({
      host: '127.0.0.1',
      port,
      path: '/graphql',
      headers: {
        connection: 'Upgrade',
        upgrade: 'websocket',
        origin,
        'sec-websocket-version': '13',
        'sec-websocket-key': 'dGhlIHNhbXBsZSBub25jZQ==',
        'sec-websocket-protocol': 'graphql-transport-ws',
      },
    });
    req.on('upgrade', (res, socket) => {
      socket.destroy();
      resolve(res.statusCode ?? 0);
    });
    req.on('response', (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on('error', reject);
    req.end();
  });
}

const preflight = (origin: string, method = 'POST', headers = 'content-type') => ({
  method: 'OPTIONS',
  headers: {
    origin,
    'access-control-request-method': method,
    'access-control-request-headers': headers,
  },
});

describe('CORS with the default origins', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startApp();
  });
  afterAll(async () => {
    await t.close();
  });

  it('answers a preflight from a refused origin with 204 and no CORS headers (not 404)', async () => {
    for (const path of ['/api/v1/users', '/graphql', '/api/v1/no-such-thing']) {
      const res = await request(t.url, path, preflight('https://evil.example'));
      expect(res.status, path).toBe(204);
      expect(res.text).toBe('');
      expect(res.headers.get('access-control-allow-origin')).toBeNull();
      expect(res.headers.get('access-control-allow-methods')).toBeNull();
      expect(res.headers.get('access-control-allow-headers')).toBeNull();
      expect(res.headers.get('access-control-allow-credentials')).toBeNull();
      expect(res.headers.get('vary')).toMatch(/Origin/);
    }
  });

  it('lets browsers send Idempotency-Key, traceparent, If-Match and If-None-Match', async () => {
    const res = await request(
      t.url,
      '/api/v1/users',
      preflight(
        'http://localhost:5173',
        'PATCH',
        'idempotency-key,traceparent,if-match,if-none-match',
      ),
    );
    expect(res.status).toBe(200);
    expect(res.headers.get('access-control-allow-origin')).toBe('http://localhost:5173');
    const allowed = (res.headers.get('access-control-allow-headers') ?? '')
      .split(',')
      .map((h) => h.trim().toLowerCase());
    expect(allowed).toEqual(
      expect.arrayContaining([
        'idempotency-key',
        'traceparent',
        'if-match',
        'if-none-match',
        'authorization',
        'content-type',
      ]),
    );
    expect(res.headers.get('access-control-allow-credentials')).toBe('true');
  });

  it('never grants the opaque origin "null"', async () => {
    const get = await request(t.url, '/api/v1/users', { headers: { origin: 'null' } });
    expect(get.headers.get('access-control-allow-origin')).toBeNull();
    const pre = await request(t.url, '/api/v1/users', preflight('null'));
    expect(pre.status).toBe(204);
    expect(pre.headers.get('access-control-allow-origin')).toBeNull();
  });

  it('does not take a look-alike of a host:* entry for the host', async () => {
    const res = await request(
      t.url,
      '/api/v1/users',
      preflight('http://localhost:5173.evil.example'),
    );
    expect(res.status).toBe(204);
    expect(res.headers.get('access-control-allow-origin')).toBeNull();
    expect(await upgradeStatus(t.url, 'http://localhost:5173.evil.example')).toBe(403);
    expect(await upgradeStatus(t.url, 'http://localhost:5173')).toBe(101);
  });
});

describe("CORS_ORIGINS='*'", () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startApp({ CORS_ORIGINS: '*,https://app.example' });
  });
  afterAll(async () => {
    await t.close();
  });

  it('serves any origin as "*" WITHOUT credentials', async () => {
    const get = await request(t.url, '/api/v1/users', {
      headers: { origin: 'https://anyone.example' },
    });
    expect(get.headers.get('access-control-allow-origin')).toBe('*');
    expect(get.headers.get('access-control-allow-credentials')).toBeNull();
    const pre = await request(t.url, '/graphql', preflight('https://anyone.example'));
    expect(pre.status).toBe(200);
    expect(pre.headers.get('access-control-allow-origin')).toBe('*');
    expect(pre.headers.get('access-control-allow-credentials')).toBeNull();
  });

  it('keeps credentials for an origin listed explicitly beside "*"', async () => {
    const pre = await request(t.url, '/graphql', preflight('https://app.example'));
    expect(pre.status).toBe(200);
    expect(pre.headers.get('access-control-allow-origin')).toBe('https://app.example');
    expect(pre.headers.get('access-control-allow-credentials')).toBe('true');
  });

  it('never echoes or grants "null", over HTTP or the WebSocket upgrade', async () => {
    const get = await request(t.url, '/api/v1/users', { headers: { origin: 'null' } });
    expect(get.headers.get('access-control-allow-origin')).toBeNull();
    expect(get.headers.get('access-control-allow-credentials')).toBeNull();
    const pre = await request(t.url, '/graphql', preflight('null'));
    expect(pre.status).toBe(204);
    expect(pre.headers.get('access-control-allow-origin')).toBeNull();
    expect(await upgradeStatus(t.url, 'null')).toBe(403);
    expect(await upgradeStatus(t.url, 'https://anyone.example')).toBe(101);
  });
});
