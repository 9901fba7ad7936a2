import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROOT, serviceBuild } from './helpers/build.js';
import { RawConnection } from './helpers/raw-http.js';

/**
 * A half-sent request on a freshly started process (`node dist/main.js`, test/helpers/build.ts),
 * as the very first connection the process ever accepts: nothing (no readiness probe, no earlier
 * client) has touched the HTTP server before. Node enforces `headersTimeout` only from a timer that
 * the server starts when it begins listening and that checks every `connectionsCheckingInterval`
 * (docs/limits.md "HTTP connections"); this checks that a silent client is cut in time from the
 * first connection on.
 */

const HEADERS_MS = 2_000;
/** Node's check runs every HEADERS_MS / 4 here; the rest is a loaded machine's slack. */
const MARGIN_MS = 1_500;

let mainJs = '';
let dir = '';

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const srv = createServer();
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as { port: number };
      srv.close(() => resolve(port));
    });
  });
}

/** Starts the built service and resolves once it logged that it listens (no request is sent). */
async function start(
  nodeEnv: string | undefined,
  extraEnv: Record<string, string> = {},
): Promise<{ child: ChildProcess; port: number; output: () => string }> {
  const port = await freePort();
  const env: Record<string, string> = {
    PATH: process.env.PATH ?? '',
    PORT: String(port),
    DATA_DIR: dir,
    DATABASE_URL: `sqlite:${join(dir, `first-${nodeEnv ?? 'unset'}.sqlite`)}`,
    HTTP_HEADERS_TIMEOUT_MS: String(HEADERS_MS),
    LOG_LEVEL: 'info',
    ...extraEnv,
  };
  if (nodeEnv !== undefined) {
    env.NODE_ENV = nodeEnv;
  }
  const child = spawn(process.execPath, [mainJs], { cwd: ROOT, env });
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (out += d.toString()));
  await new Promise<void>((resolve, reject) => {
    const check = () => {
      if (out.includes('Listening on')) {
        child.stdout.off('data', check);
        child.off('exit', exited);
        resolve();
      }
    };
    const exited = (code: number | null) => reject(new Error(`exited ${code}:\n${out}`));
    child.stdout.on('data', check);
    child.once('exit', exited);
  });
  return { child, port, output: () => out };
}

/** Opens the first connection, sends half a request head, and expects the 408 within the bound. */
async function expectCutInTime(port: number): Promise<void> {
  const conn = await RawConnection.open(`http://127.0.0.1:${port}`);
  conn.write('GET /api/v1/users HTTP/1.1\r\nHost: x\r\n');
  const limit = HEADERS_MS + MARGIN_MS;
  const lifetime = await Promise.race([
    conn.closed,
    new Promise<number>((resolve) => setTimeout(() => resolve(-1), limit + 5_000)),
  ]);
  conn.destroy();
  expect(lifetime, `still open after ${limit + 5_000} ms`).not.toBe(-1);
  expect(lifetime).toBeGreaterThanOrEqual(HEADERS_MS - 50);
  expect(lifetime).toBeLessThan(limit);
  expect(conn.text).toMatch(/^HTTP\/1\.1 408 /);
  expect(JSON.parse(conn.text.slice(conn.text.indexOf('\r\n\r\n') + 4))).toEqual({
    error: { code: 'bad_request', message: 'The request was not received in time' },
  });
}

beforeAll(() => {
  mainJs = join(serviceBuild(), 'main.js');
  dir = mkdtempSync(join(tmpdir(), 'atrium-first-'));
}, 180_000);
afterAll(() => {
  if (dir) {
    rmSync(dir, { recursive: true, force: true });
  }
});

describe('a silent client as the first connection of a fresh process', () => {
  it.each([['unset'], ['production'], ['development']])(
    'NODE_ENV %s: the half-sent request is answered 408 and closed within HTTP_HEADERS_TIMEOUT_MS',
    async (name) => {
      const proc = await start(name === 'unset' ? undefined : name);
      try {
        await expectCutInTime(proc.port);
      } finally {
        proc.child.kill('SIGKILL');
      }
    },
    60_000,
  );
});

/**
 * A runtime whose own check never starts (the report this file answers: fresh instances on which a
 * silent client stayed connected for minutes). The service process is started with a preload that
 * removes Node's `listening` handler (`setupConnectionsTracking`) from every HTTP server, so Node
 * neither tracks connections nor checks their timeouts: the service's own first-request deadline
 * (src/http/header-deadline.ts) must still cut the client.
 */
const WITHOUT_NODE_CHECK = `
import http from 'node:http';
const create = http.createServer;
http.createServer = function (...args) {
  const server = create.apply(this, args);
  for (const fn of server.listeners('listening')) {
    if (fn.name === 'setupConnectionsTracking') server.off('listening', fn);
  }
  return server;
};
`;

describe("a silent first connection when Node's own header check never runs", () => {
  it('is answered 408 and closed within HTTP_HEADERS_TIMEOUT_MS all the same', async () => {
    const preload = join(dir, 'without-node-check.mjs');
    writeFileSync(preload, WITHOUT_NODE_CHECK);
    const proc = await start(undefined, { NODE_OPTIONS: `--import ${preload}` });
    try {
      await expectCutInTime(proc.port);
    } finally {
      proc.child.kill('SIGKILL');
    }
  }, 60_000);
});
