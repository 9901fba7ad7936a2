import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { serviceBuild } from './helpers/build.js';
import { client, request } from './helpers/http.js';
import { startLoad, statusCounts } from './helpers/load.js';
import { RawConnection } from './helpers/raw-http.js';
import { waitFor } from './helpers/wait.js';
import { connect, subscribe } from './subscriptions-helpers.js';

/**
 * The built service as a real process (`node dist/main.js`, here a build of the suite's own or the
 * one CI made: test/helpers/build.ts), as `npm start` runs it: configuration errors, log redaction
 * and graceful shutdown can only be seen from outside.
 */
const ROOT = new URL('..', import.meta.url).pathname;
let mainJs = '';

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const srv = createServer();
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as { port: number };
      srv.close(() => resolve(port));
    });
  });
}

interface Proc {
  child: ChildProcess;
  stdout: () => string;
  stderr: () => string;
  exited: Promise<number | null>;
}

function run(env: Record<string, string>): Proc {
  const child = spawn(process.execPath, [mainJs], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', NODE_ENV: 'production', ...env },
  });
  let out = '';
  let err = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (err += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return { child, stdout: () => out, stderr: () => err, exited };
}

async function waitReady(base: string, proc: Proc): Promise<void> {
  // a busy machine boots slowly: the deadline is scaled by the run's load factor
  await waitFor(
    async () => (await fetch(`${base}/health/ready`).catch(() => undefined))?.status === 200,
    {
      timeoutMs: 40_000,
      intervalMs: 100,
      what: () => `the app to become ready:\n${proc.stdout()}\n${proc.stderr()}`,
    },
  );
}

// one build for the whole file (both blocks run it)
beforeAll(() => {
  mainJs = join(serviceBuild(), 'main.js');
}, 180_000);

describe('the service as a process', () => {
  let dir: string;

  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'atrium-proc-'));
  });
  afterAll(() => {
    if (dir) {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it.each([
    ['PORT', 'abc', /^Invalid configuration: PORT must be an integer/],
    [
      'DATABASE_URL',
      'mysql://localhost/x',
      /^Invalid configuration: DATABASE_URL must use postgres/,
    ],
    ['LOG_LEVEL', 'loud', /^Invalid configuration: LOG_LEVEL must be one of/],
    ['CORS_ORIGINS', 'not a url', /^Invalid configuration: CORS_ORIGINS has an invalid origin/],
    ['ADMIN_PASSWORD', 'short', /^Invalid configuration: ADMIN_EMAIL must be set together/],
    [
      'SHUTDOWN_DRAIN_DELAY_MS',
      '9000',
      /^Invalid configuration: SHUTDOWN_GRACE_MS must be longer than SHUTDOWN_DRAIN_DELAY_MS/,
    ],
  ])('stops at boot with one clear line when %s is %s', async (name, value, message) => {
    const proc = run({ DATA_DIR: dir, DATABASE_URL: 'sqlite::memory:', [name]: value });
    expect(await proc.exited).toBe(1);
    const lines = proc.stderr().trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(message);
  });

  it('logs JSON lines with request ids and never logs credentials', async () => {
    const port = await freePort();
    const base = `http://127.0.0.1:${port}`;
    const password = 'log-admin-password-1';
    const proc = run({
      PORT: String(port),
      DATA_DIR: dir,
      DATABASE_URL: `sqlite:${join(dir, 'logs.sqlite')}`,
      ADMIN_EMAIL: 'log-admin@example.com',
      ADMIN_PASSWORD: password,
      LOG_LEVEL: 'info',
    });
    try {
      await waitReady(base, proc);
      const basic = Buffer.from(`log-admin@example.com:${password}`).toString('base64');
      const token = await request(base, '/api/v1/auth/token', {
        method: 'POST',
        body: { email: 'log-admin@example.com', password },
      });
      const key = await request(base, '/api/v1/api-keys', {
        method: 'POST',
        body: { name: 'log' },
        headers: { authorization: `Basic ${basic}` },
      });
      const secret = key.body.data.key as string;
      await request(base, '/api/v1/users', {
        headers: { 'x-api-key': secret, 'x-request-id': 'log-check-1' },
      });
      await request(base, `/api/v1/users?api_key=${secret}`);
      await request(base, '/api/v1/users', {
        headers: { authorization: `Bearer ${token.body.access_token}` },
      });
      // pino writes asynchronously: wait until the five request lines are out
      await vi.waitFor(
        () =>
          expect(proc.stdout().match(/"request completed"/g)?.length ?? 0).toBeGreaterThanOrEqual(
            5,
          ),
        { timeout: 5_000, interval: 20 },
      );

      const lines = proc
        .stdout()
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as Record<string, any>);
      const output = proc.stdout();
      for (const leaked of [
        secret,
        password,
        basic,
        token.body.access_token,
        token.body.refresh_token,
      ]) {
        expect(output).not.toContain(leaked);
      }
      const tagged = lines.find(
        (l) => l.req?.id === 'log-check-1' || l.request_id === 'log-check-1',
      );
      expect(tagged, output).toBeDefined();
      expect(output).toContain('api_key=[redacted]');
      expect(tagged?.req).toMatchObject({
        method: 'GET',
        url: '/api/v1/users',
        remoteAddress: '127.0.0.1',
      });
      const requestLines = lines.filter((l) => l.req || l.res);
      expect(requestLines.length).toBeGreaterThanOrEqual(4);
      expect(requestLines.every((l) => typeof (l.req?.id ?? l.request_id) === 'string')).toBe(true);
    } finally {
      proc.child.kill('SIGKILL');
      await proc.exited;
    }
  });

  it('finishes in-flight requests on SIGTERM, then exits', async () => {
    const port = await freePort();
    const base = `http://127.0.0.1:${port}`;
    const proc = run({
      PORT: String(port),
      DATA_DIR: dir,
      DATABASE_URL: `sqlite:${join(dir, 'shutdown.sqlite')}`,
      ADMIN_EMAIL: 'bye@example.com',
      ADMIN_PASSWORD: 'shutdown-password-1',
      LOG_LEVEL: 'warn',
    });
    await waitReady(base, proc);
    // A token request sent with `Expect: 100-continue`: the server answers 100 once it has parsed the
    // request line and headers, so the request is provably in flight when SIGTERM lands; the body
    // follows only after the signal.
    const body = JSON.stringify({ email: 'bye@example.com', password: 'shutdown-password-1' });
    const req = httpRequest(`${base}/api/v1/auth/token`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'content-length': String(Buffer.byteLength(body)),
        expect: '100-continue',
      },
    });
    const response = new Promise<{ status: number; body: any }>((resolve, reject) => {
      req.on('response', (res) => {
        let text = '';
        res.on('data', (d: Buffer) => (text += d.toString()));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) }));
      });
      req.on('error', reject);
    });
    req.flushHeaders();
    await once(req, 'continue');
    proc.child.kill('SIGTERM');
    req.end(body);
    const res = await response;
    expect(res.status).toBe(200);
    expect(res.body.access_token).toEqual(expect.any(String));
    // Nest re-raises the signal once closed: a clean exit is code 0 or "killed by SIGTERM" (null)
    expect([0, null]).toContain(await proc.exited);
    await expect(fetch(`${base}/health/live`)).rejects.toThrow();
  });
});

/**
 * SIGTERM while requests and WebSockets are open (docs/limits.md "Shutdown"): readiness fails first
 * while requests are still served for SHUTDOWN_DRAIN_DELAY_MS, then WebSockets are closed with 1001,
 * new connections are refused, the request in flight is answered, and the process exits 0 within
 * SHUTDOWN_GRACE_MS; a request that never finishes cannot hold it past the grace period.
 */
describe('shutdown under load', () => {
  let dir: string;

  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'atrium-drain-'));
  });
  afterAll(() => {
    if (dir) {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  async function started(name: string, env: Record<string, string>) {
    const port = await freePort();
    const base = `http://127.0.0.1:${port}`;
    const proc = run({
      PORT: String(port),
      DATA_DIR: dir,
      DATABASE_URL: `sqlite:${join(dir, `${name}.sqlite`)}`,
      ADMIN_EMAIL: 'drain@example.com',
      ADMIN_PASSWORD: 'drain-password-1',
      RATE_LIMIT: '1000000',
      // the load's list reads spend the cost budget too (docs/rate-limits.md)
      GRAPHQL_COST_BUDGET: '1000000000',
      LOG_LEVEL: 'info',
      ...env,
    });
    await waitReady(base, proc);
    return { base, proc };
  }

  /** A request on a connection of its own (no keep-alive pool): status, or the network error code. */
  function fresh(url: string): Promise<number | string> {
    return new Promise((resolve) => {
      const req = httpRequest(url, { agent: false }, (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      });
      req.on('error', (err: NodeJS.ErrnoException) => resolve(err.code ?? err.message));
      req.end();
    });
  }

  it('fails readiness first, serves in-flight requests, closes sockets with 1001 and exits within the grace period', async () => {
    const drainMs = 1_000;
    const graceMs = 6_000;
    const { base, proc } = await started('load', {
      SHUTDOWN_DRAIN_DELAY_MS: String(drainMs),
      SHUTDOWN_GRACE_MS: String(graceMs),
    });
    try {
      const login = { email: 'drain@example.com', password: 'drain-password-1' };
      const token = (await request(base, '/api/v1/auth/token', { method: 'POST', body: login }))
        .body.access_token as string;
      const admin = client(base, { bearer: token });
      const room = (await admin.post('/api/v1/rooms', { name: 'drain' })).body.data.id as string;
      const sockets = await Promise.all(
        Array.from({ length: 3 }, async () => {
          const socket = await connect(base, { bearer: token });
          subscribe(socket, 'subscription($r: ID!) { messageAdded(roomId: $r) { id } }', {
            r: room,
          });
          return socket;
        }),
      );
      const wsClosed = sockets.map((s) =>
        s.closed.then((code) => ({ code, at: performance.now() })),
      );

      // a request provably in flight: its headers are parsed (100 Continue), its body comes later
      const body = JSON.stringify(login);
      const held = await RawConnection.open(base);
      held.write(
        `POST /api/v1/auth/token HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n` +
          `Content-Length: ${Buffer.byteLength(body)}\r\nExpect: 100-continue\r\n\r\n`,
      );
      expect((await held.response()).status).toBe(100);

      const load = startLoad(4, (w) =>
        w === 0
          ? {
              kind: 'write',
              send: () => admin.post(`/api/v1/rooms/${room}/messages`, { content: 'x' }),
            }
          : { kind: 'read', send: () => admin.get('/api/v1/users?limit=5') },
      );
      await load.until((s) => s.length >= 20, 10_000, '20 answers before the signal');

      const signalled = performance.now();
      proc.child.kill('SIGTERM');
      const exited = proc.exited.then((code) => ({ code, at: performance.now() }));

      // draining: readiness 503 on a new connection while requests are still served, and a new
      // WebSocket is refused
      let readyFailedAt = 0;
      while (readyFailedAt === 0) {
        const status = await fresh(`${base}/health/ready`);
        if (status === 503) {
          readyFailedAt = performance.now();
        } else {
          expect(status).toBe(200);
        }
      }
      expect(await fresh(`${base}/health/live`)).toBe(200);
      await expect(connect(base, { bearer: token })).rejects.toThrow();

      // closing: every socket is closed with 1001, then new connections are refused
      const closes = await Promise.all(wsClosed);
      expect(closes.map((c) => c.code)).toEqual([1001, 1001, 1001]);
      // (a connection racing the close of the listening socket may be accepted and reset instead, or
      // answered 503 by the closing application, as the load below may be)
      let refused: number | string = 0;
      while (refused !== 'ECONNREFUSED') {
        refused = await fresh(`${base}/health/live`);
        if (refused !== 'ECONNREFUSED') {
          expect([200, 503, 'ECONNRESET']).toContain(refused);
        }
      }

      // the request in flight since before the signal is answered
      held.write(body);
      const answer = await held.response();
      expect(answer.status).toBe(200);
      expect(JSON.parse(answer.body).access_token).toEqual(expect.any(String));
      expect(answer.headers.connection).toBe('close');

      const exit = await exited;
      await load.stop();
      expect(exit.code).toBe(0);
      // readiness failed before anything closed; the drain delay was kept; exit within the grace
      const firstClose = Math.min(...closes.map((c) => c.at));
      expect(readyFailedAt).toBeLessThan(firstClose);
      expect(firstClose - signalled).toBeGreaterThanOrEqual(drainMs - 50);
      expect(exit.at - signalled).toBeLessThan(graceMs);
      // the load only ever saw answers (200/201, or 503 in the envelope) or a refused connection
      for (const s of load.samples) {
        if (s.status === 503) {
          expect(s.res!.body.error.code).toBe('service_unavailable');
          expect(s.res!.headers.get('retry-after')).toBe('1');
        } else if (s.status === 0) {
          expect(['ECONNREFUSED', 'ECONNRESET']).toContain(s.error);
        } else {
          expect([200, 201]).toContain(s.status);
        }
      }
      expect(proc.stdout()).toMatch(/"msg":"closed in \d+ ms"/);
      console.info(
        `shutdown: readiness 503 after ${(readyFailedAt - signalled).toFixed(0)} ms, sockets closed (1001) after ${(firstClose - signalled).toFixed(0)} ms, exit after ${(exit.at - signalled).toFixed(0)} ms; load ${JSON.stringify(statusCounts(load.samples))}`,
      );
    } finally {
      proc.child.kill('SIGKILL');
      await proc.exited;
    }
  }, 40_000);

  it('exits (code 1) when SHUTDOWN_GRACE_MS is over with a request still unfinished', async () => {
    const graceMs = 1_500;
    const { base, proc } = await started('grace', { SHUTDOWN_GRACE_MS: String(graceMs) });
    try {
      // a body that never completes (the request timeout is 30 s)
      const stuck = await RawConnection.open(base);
      stuck.write(
        'POST /api/v1/auth/token HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n' +
          'Content-Length: 100\r\nExpect: 100-continue\r\n\r\n',
      );
      expect((await stuck.response()).status).toBe(100);
      stuck.write('{"email":');
      const signalled = performance.now();
      proc.child.kill('SIGTERM');
      expect(await proc.exited).toBe(1);
      const took = performance.now() - signalled;
      expect(took).toBeGreaterThanOrEqual(graceMs - 50);
      expect(took).toBeLessThan(graceMs + 2_000);
      expect(proc.stdout()).toContain('not closed within SHUTDOWN_GRACE_MS (1500 ms)');
      stuck.destroy();
    } finally {
      proc.child.kill('SIGKILL');
      await proc.exited;
    }
  }, 30_000);
});
