import WebSocket from 'ws';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApp, type TestApp } from './helpers/app.js';
import { RawConnection } from './helpers/raw-http.js';

const HEADERS_MS = 300;
const REQUEST_MS = 600;
const KEEP_ALIVE_MS = 2_500;

/**
 * The sentinel of the tests that show a connection is NOT cut: a connection opened now that stops
 * half-way through its body, resolved when the server cuts it for HTTP_REQUEST_TIMEOUT_MS. Node checks
 * the header and request timeouts of all connections in one pass, so by then every connection opened
 * before the sentinel has been idle (or open) longer than the request timeout, and has been checked.
 */
async function requestTimeoutFired(url: string): Promise<void> {
  const sentinel = await RawConnection.open(url);
  sentinel.write(
    'POST /api/v1/auth/token HTTP/1.1\r\nHost: atrium.test\r\nContent-Type: application/json\r\n' +
      'Content-Length: 100\r\n\r\n{"email":',
  );
  expect(await sentinel.closed).toBeGreaterThanOrEqual(REQUEST_MS - 50);
  expectTimeoutAnswer(sentinel.text);
}

function expectTimeoutAnswer(text: string): void {
  expect(text).toMatch(/^HTTP\/1\.1 408 /);
  const body = text.slice(text.indexOf('\r\n\r\n') + 4);
  expect(JSON.parse(body)).toEqual({
    error: { code: 'bad_request', message: 'The request was not received in time' },
  });
}

describe('HTTP server timeouts (short ones configured for the test)', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startApp({
      HTTP_HEADERS_TIMEOUT_MS: String(HEADERS_MS),
      HTTP_REQUEST_TIMEOUT_MS: String(REQUEST_MS),
      HTTP_KEEP_ALIVE_TIMEOUT_MS: String(KEEP_ALIVE_MS),
    });
  });
  afterAll(async () => {
    await t.close();
  });

  it('disconnects a client that sends half its headers and stops (408 in the envelope)', async () => {
    const conn = await RawConnection.open(t.url);
    conn.write('GET /health/live HTTP/1.1\r\nHost: atrium.test\r\nAccept: appl');
    const lifetime = await conn.closed;
    expect(lifetime).toBeGreaterThanOrEqual(HEADERS_MS - 50);
    expect(lifetime).toBeLessThan(HEADERS_MS + 2_000);
    expectTimeoutAnswer(conn.text);
  });

  it('disconnects a client that trickles its headers a byte at a time', async () => {
    const conn = await RawConnection.open(t.url);
    const head = `GET /health/live HTTP/1.1\r\nHost: atrium.test\r\nX-Pad: ${'a'.repeat(200)}\r\n\r\n`;
    let sent = 0;
    const timer = setInterval(() => {
      if (!conn.isClosed && sent < head.length) {
        conn.write(head[sent++]);
      }
    }, 20);
    try {
      const lifetime = await conn.closed;
      expect(sent).toBeLessThan(head.length); // cut before the headers were complete
      expect(lifetime).toBeLessThan(HEADERS_MS + 2_000);
      expectTimeoutAnswer(conn.text);
    } finally {
      clearInterval(timer);
    }
  });

  it('disconnects a client whose body never finishes', async () => {
    const conn = await RawConnection.open(t.url);
    conn.write(
      'POST /api/v1/auth/token HTTP/1.1\r\nHost: atrium.test\r\nContent-Type: application/json\r\n' +
        'Content-Length: 100\r\n\r\n{"email":',
    );
    const lifetime = await conn.closed;
    expect(lifetime).toBeGreaterThanOrEqual(REQUEST_MS - 50);
    expect(lifetime).toBeLessThan(REQUEST_MS + 2_000);
    expectTimeoutAnswer(conn.text);
  });

  it('keeps a well-behaved keep-alive connection usable past the header and request timeouts', async () => {
    const conn = await RawConnection.open(t.url);
    try {
      const ask = () =>
        conn.write(
          'GET /health/live HTTP/1.1\r\nHost: atrium.test\r\nAccept: application/json\r\n\r\n',
        );
      ask();
      expect((await conn.response()).status).toBe(200);
      // idle for longer than both the header and the request timeout, well within keep-alive
      await requestTimeoutFired(t.url);
      expect(conn.isClosed).toBe(false);
      ask();
      const second = await conn.response();
      expect(second.status).toBe(200);
      expect(JSON.parse(second.body)).toMatchObject({ status: 'ok' });
    } finally {
      conn.destroy();
    }
  });

  it('closes an idle keep-alive connection after HTTP_KEEP_ALIVE_TIMEOUT_MS', async () => {
    const conn = await RawConnection.open(t.url);
    conn.write('GET /health/live HTTP/1.1\r\nHost: atrium.test\r\n\r\n');
    expect((await conn.response()).status).toBe(200);
    const lifetime = await conn.closed;
    expect(lifetime).toBeGreaterThanOrEqual(KEEP_ALIVE_MS - 100);
    expect(lifetime).toBeLessThan(KEEP_ALIVE_MS + 3_000);
  });

  it('does not cut a WebSocket open longer than the request timeout', async () => {
    const ws = new WebSocket(`${t.url.replace(/^http/, 'ws')}/graphql`, 'graphql-transport-ws');
    const messages: string[] = [];
    ws.on('message', (data: Buffer) => messages.push(data.toString('utf8')));
    await new Promise<void>((resolve, reject) => {
      ws.once('open', () => resolve());
      ws.once('error', reject);
    });
    try {
      await requestTimeoutFired(t.url);
      expect(ws.readyState).toBe(WebSocket.OPEN);
      ws.send(JSON.stringify({ type: 'ping' }));
      const deadline = Date.now() + 3_000;
      while (!messages.some((m) => m.includes('"pong"')) && Date.now() < deadline) {
        await new Promise((r) => ws.once('message', r));
      }
      expect(messages.some((m) => m.includes('"pong"'))).toBe(true);
    } finally {
      ws.close();
    }
  });
});

describe('HTTP server timeouts (defaults)', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startApp();
  });
  afterAll(async () => {
    await t.close();
  });

  it('sets headers 10 s, request 30 s and keep-alive 72 s on the server', () => {
    const server = t.app.getHttpServer();
    expect(server.headersTimeout).toBe(10_000);
    expect(server.requestTimeout).toBe(30_000);
    expect(server.keepAliveTimeout).toBe(72_000);
  });
});
