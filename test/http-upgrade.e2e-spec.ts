import { readdirSync } from 'node:fs';
import net from 'node:net';
import type { DestinationStream } from 'pino';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { ShutdownState } from '../src/http/shutdown.js';
import { MetricsService } from '../src/metrics/metrics.service.js';
import { startApp, type TestApp } from './helpers/app.js';
import { request } from './helpers/http.js';
import { RawConnection, type RawResponse } from './helpers/raw-http.js';

/** Open file descriptors of this process (the app runs in it). */
const openFds = (): number => readdirSync('/proc/self/fd').length;

/**
 * Connections the app's HTTP server holds (upgraded sockets included until they close). Compared
 * with a baseline as "at most": the baseline may hold idle keep-alive connections of earlier
 * fetches, which the client side closes after a few seconds.
 */
function serverConnections(t: TestApp): Promise<number> {
  const server = t.app.getHttpServer() as net.Server;
  return new Promise((resolve, reject) =>
    server.getConnections((err, n) => (err ? reject(err) : resolve(n))),
  );
}

const upgradeRequest = (path: string, headers: Record<string, string> = {}): string =>
  [
    `GET ${path} HTTP/1.1`,
    'Host: atrium.test',
    'Connection: Upgrade',
    'Upgrade: websocket',
    'Sec-WebSocket-Version: 13',
    'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==',
    ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`),
    '',
    '',
  ].join('\r\n');

/** Sends `data`, reads the one answer and waits for the server to close the connection. */
async function refused(base: string, data: string): Promise<RawResponse & { closedMs: number }> {
  const conn = await RawConnection.open(base);
  try {
    conn.write(data);
    const res = await conn.response(3_000);
    const closedMs = await Promise.race([
      conn.closed,
      new Promise<number>((_, reject) =>
        setTimeout(() => reject(new Error('the server did not close the connection')), 5_000),
      ),
    ]);
    return { ...res, closedMs };
  } finally {
    conn.destroy();
  }
}

function expectEnvelope(res: RawResponse, status: number, code: string): { message: string } {
  expect(res.status).toBe(status);
  expect(res.headers['content-type']).toMatch(/^application\/json/);
  expect(res.headers.connection).toBe('close');
  expect(res.headers['x-request-id']).toMatch(/^[A-Za-z0-9._:-]{1,128}$/);
  const body = JSON.parse(res.body) as { error: { code: string; message: string } };
  expect(Object.keys(body)).toEqual(['error']);
  expect(body.error.code).toBe(code);
  return body.error;
}

async function inBatches(total: number, size: number, run: (i: number) => Promise<void>) {
  for (let start = 0; start < total; start += size) {
    const batch = [];
    for (let i = start; i < Math.min(total, start + size); i++) {
      batch.push(run(i));
    }
    await Promise.all(batch);
  }
}

describe('an Upgrade request on any path is answered and its socket closed', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startApp({ CORS_ORIGINS: 'https://app.example' });
    // warm up (database pool, Redis) so the baseline does not move for other reasons
    await request(t.url, '/api/v1/users');
  });
  afterAll(async () => {
    await t.close();
  });

  it('answers 404 in the envelope on a path with no WebSocket endpoint, closes, and leaks no fd over 300 requests', async () => {
    const baseline = openFds();
    const connections = await serverConnections(t); // the warm-up's keep-alive connection
    const paths = ['/api/v1/users', '/', '/health/live', '/oauth/auth', '/api/v1/no-such-thing'];
    await inBatches(300, 50, async (i) => {
      const path = paths[i % paths.length];
      const res = await refused(
        t.url,
        upgradeRequest(`${path}?n=${i}`, { 'X-Request-Id': `upgrade-${i}` }),
      );
      const error = expectEnvelope(res, 404, 'not_found');
      expect(error.message).toContain(`No WebSocket endpoint at ${path}`);
      expect(res.headers['x-request-id']).toBe(`upgrade-${i}`);
      expect(res.headers['ratelimit-limit']).toBeDefined();
    });
    // every client socket of the test is destroyed: what is left open would be the server's
    await vi.waitFor(
      async () => {
        expect(await serverConnections(t)).toBeLessThanOrEqual(connections);
        expect(openFds()).toBeLessThanOrEqual(baseline + 5);
      },
      { timeout: 10_000, interval: 100 },
    );
  });

  it('closes the socket of a client that never reads the answer, and of one that leaves mid-way', async () => {
    const baseline = openFds();
    const connections = await serverConnections(t);
    // 40 clients that send an upgrade and never read: the server ends, then destroys after its grace
    const silent: net.Socket[] = [];
    await inBatches(40, 40, async () => {
      const { port } = new URL(t.url);
      const socket = net.connect(Number(port), '127.0.0.1');
      socket.on('error', () => undefined);
      await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
      socket.pause();
      socket.write(upgradeRequest('/api/v1/posts'));
      silent.push(socket);
    });
    // 60 that leave right after (or in the middle of) the request
    await inBatches(60, 30, async (i) => {
      const conn = await RawConnection.open(t.url);
      const data = upgradeRequest('/api/v1/users');
      conn.write(i % 2 === 0 ? data : data.slice(0, data.length - 2));
      conn.destroy();
    });
    // the client sockets still exist on the test's side; the server holds none of them
    await vi.waitFor(
      async () => expect(await serverConnections(t)).toBeLessThanOrEqual(connections),
      {
        timeout: 10_000,
        interval: 100,
      },
    );
    silent.forEach((s) => s.destroy());
    await vi.waitFor(() => expect(openFds()).toBeLessThanOrEqual(baseline + 5), {
      timeout: 10_000,
      interval: 100,
    });
    // and the app still serves
    expect((await request(t.url, '/health/live')).status).toBe(200);
  });

  it('on /graphql: 400 for another protocol, 405 for another method, 400 for a bad handshake, 403 for a refused origin: all in the envelope', async () => {
    const connections = await serverConnections(t);
    const h2c = await refused(
      t.url,
      'GET /graphql HTTP/1.1\r\nHost: x\r\nConnection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAAQAoAAAAAIAAAAA\r\n\r\n',
    );
    expect(expectEnvelope(h2c, 400, 'bad_request').message).toMatch(/Only WebSocket upgrades/);

    const post = await refused(
      t.url,
      upgradeRequest('/graphql')
        .replace(/^GET/, 'POST')
        .replace('\r\n\r\n', '\r\nContent-Length: 0\r\n\r\n'),
    );
    expectEnvelope(post, 405, 'method_not_allowed');
    expect(post.headers.allow).toBe('GET');

    const version = await refused(
      t.url,
      upgradeRequest('/graphql').replace('Sec-WebSocket-Version: 13', 'Sec-WebSocket-Version: 99'),
    );
    expect(expectEnvelope(version, 400, 'bad_request').message).toMatch(/Sec-WebSocket-Version/);
    expect(version.headers['sec-websocket-version']).toBe('13, 8');

    const origin = await refused(
      t.url,
      upgradeRequest('/graphql', { Origin: 'https://evil.example' }),
    );
    expectEnvelope(origin, 403, 'forbidden');
    await vi.waitFor(async () =>
      expect(await serverConnections(t)).toBeLessThanOrEqual(connections),
    );
  });

  it('still upgrades a WebSocket on /graphql', async () => {
    const conn = await RawConnection.open(t.url);
    try {
      conn.write(upgradeRequest('/graphql', { 'Sec-WebSocket-Protocol': 'graphql-transport-ws' }));
      const res = await conn.response();
      expect(res.status).toBe(101);
      expect(res.headers['sec-websocket-protocol']).toBe('graphql-transport-ws');
    } finally {
      conn.destroy();
    }
  });
});

describe('refused upgrades count in the address request limit, are logged and measured', () => {
  let t: TestApp;
  const lines: Record<string, any>[] = [];
  const log: DestinationStream = {
    write: (chunk: string) =>
      chunk
        .split('\n')
        .filter(Boolean)
        .forEach((text) => lines.push(JSON.parse(text) as Record<string, any>)),
  };
  beforeAll(async () => {
    t = await startApp(
      { RATE_LIMIT: '5', RATE_LIMIT_WINDOW_S: '60', LOG_LEVEL: 'info' },
      { logDestination: log },
    );
  });
  afterAll(async () => {
    await t.close();
  });

  it('answers 429 with Retry-After once the address has used its requests, and REST is limited too', async () => {
    const statuses: number[] = [];
    let last: RawResponse | undefined;
    for (let i = 0; i < 7; i++) {
      last = await refused(t.url, upgradeRequest('/api/v1/users'));
      statuses.push(last.status);
    }
    expect(statuses).toEqual([404, 404, 404, 404, 404, 429, 429]);
    expectEnvelope(last!, 429, 'rate_limited');
    expect(last!.headers['retry-after']).toMatch(/^\d+$/);
    expect(last!.headers['ratelimit-remaining']).toBe('0');
    // the same bucket as the address's REST requests
    expect((await request(t.url, '/api/v1/users')).status).toBe(429);

    const refusals = lines.filter((l) => l.event === 'upgrade_refused');
    expect(refusals).toHaveLength(5);
    expect(refusals[0]).toMatchObject({
      level: 30,
      msg: 'upgrade refused',
      req: { method: 'GET', url: '/api/v1/users', remoteAddress: '127.0.0.1' },
      res: { statusCode: 404 },
      upgrade: 'websocket',
    });
    expect(refusals[0].request_id).toMatch(/^[0-9a-f-]{36}$/);
    const limited = lines.filter((l) => l.msg === 'upgrade refused: rate limited');
    expect(limited).toHaveLength(2);
    expect(limited[0]).toMatchObject({
      level: 40,
      event: 'rate_limited',
      res: { statusCode: 429 },
    });

    const metrics = await t.app.get(MetricsService).registry.metrics();
    expect(metrics).toMatch(
      /atrium_http_request_duration_seconds_count\{method="GET",route="upgrade",status="404"\} 5\b/,
    );
    expect(metrics).toMatch(
      /atrium_http_request_duration_seconds_count\{method="GET",route="upgrade",status="429"\} 2\b/,
    );
  });
});

describe('while draining, a WebSocket upgrade on /graphql is refused in the envelope', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startApp({ RATE_LIMIT: '2' });
  });
  afterAll(async () => {
    await t.close();
  });

  it('503 with Retry-After, not counted against the address', async () => {
    t.app.get(ShutdownState).beginDraining();
    for (let i = 0; i < 3; i++) {
      const res = await refused(
        t.url,
        upgradeRequest('/graphql', { 'Sec-WebSocket-Protocol': 'graphql-transport-ws' }),
      );
      expect(expectEnvelope(res, 503, 'service_unavailable').message).toMatch(/shutting down/);
      expect(res.headers['retry-after']).toBe('1');
      expect(res.headers['ratelimit-limit']).toBeUndefined();
    }
  });
});
