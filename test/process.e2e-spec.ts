import { execSync, spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { request } from './helpers/http.js';

/**
 * The built service as a real process (`node dist/main.js`), as `npm start` runs it: configuration
 * errors, log redaction and graceful shutdown can only be seen from outside.
 */
const ROOT = new URL('..', import.meta.url).pathname;

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
  const child = spawn(process.execPath, ['dist/main.js'], {
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
  const deadline = Date.now() + 20_000;
  while (Date.now() < deadline) {
    try {
      if ((await fetch(`${base}/health/ready`)).status === 200) {
        return;
      }
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`app did not become ready:\n${proc.stdout()}\n${proc.stderr()}`);
}

describe('the service as a process', () => {
  let dir: string;

  beforeAll(() => {
    execSync('npm run build', { cwd: ROOT, stdio: 'pipe' });
    dir = mkdtempSync(join(tmpdir(), 'atrium-proc-'));
  }, 120_000);
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
