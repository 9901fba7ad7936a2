// Helpers shared by the benchmark scripts that start the built app themselves
// (bench/hostile-graphql.mjs, bench/abuse.mjs).
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';

/** POSTs JSON; throws on a status of 300 or more. */
export async function post(url, body, headers = {}) {
  const res = await fetch(url, {
    method: 'POST',
    headers: { ...headers, 'content-type': 'application/json', accept: 'application/json' },
    body: JSON.stringify(body),
  });
  const text = await res.text();
  if (res.status >= 300) {
    throw new Error(`POST ${url} -> ${res.status}: ${text.slice(0, 300)}`);
  }
  return { status: res.status, json: text ? JSON.parse(text) : undefined };
}

/** Waits until `url` answers 200, failing when `child` exits first or after `timeoutMs` (60 s). */
export async function waitReady(child, url, timeoutMs = 60_000) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) {
      throw new Error(`app exited with ${child.exitCode} before it was ready`);
    }
    try {
      const res = await fetch(url);
      await res.arrayBuffer();
      if (res.status === 200) {
        return;
      }
    } catch {
      // not listening yet
    }
    await sleep(200);
  }
  throw new Error(`app not ready at ${url}`);
}

/** A TCP port free on 127.0.0.1 right now. */
export function freePort() {
  return new Promise((resolvePort, reject) => {
    const srv = createServer();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => resolvePort(port));
    });
  });
}

/** User + system CPU time of a process so far, in ms (Linux, clock ticks of 10 ms); 0 elsewhere. */
export function cpuMs(pid) {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
    return (Number(fields[11]) + Number(fields[12])) * 10;
  } catch {
    return 0;
  }
}

/**
 * Starts the built app of `root` (`node dist/main.js`; throws with its path when not built) on a free
 * port of 127.0.0.1: NODE_ENV=production, a fresh SQLite file in a temporary directory
 * (`atrium-<name>-*`), LOG_LEVEL=warn, the boot admin `admin` ({ email, password }), request rate
 * limits that load cannot exhaust and no Redis, with `env` on top (it may name a DATABASE_URL and a
 * REDIS_URL of its own). BENCH_APP_NODE_ARGS are extra node flags of the app (e.g. "--cpu-prof
 * --cpu-prof-dir=/tmp/prof"). Resolves once `GET /health/ready` answers 200, to
 * `{ url, proc, stop, dbPath }`: `stop()` ends the app and removes the directory (it is also called
 * when the app does not become ready) and resolves once the app exited; `dbPath` is the SQLite file.
 * `wrap`: a command the app runs under (`['valgrind', …]`, the node command appended); with it,
 * `readyTimeoutMs` (60 s) may need to be longer.
 */
export async function startBuiltApp({
  root,
  name,
  admin,
  env = {},
  wrap = [],
  readyTimeoutMs = 60_000,
}) {
  const mainJs = join(root, 'dist', 'main.js');
  readFileSync(mainJs); // throws with a clear path when not built
  const workDir = mkdtempSync(join(tmpdir(), `atrium-${name}-`));
  const dbPath = join(workDir, 'bench.sqlite');
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const appEnv = {
    ...process.env,
    NODE_ENV: 'production',
    PORT: String(port),
    HOST: '127.0.0.1',
    PUBLIC_URL: url,
    DATABASE_URL: `sqlite:${dbPath}`,
    LOG_LEVEL: 'warn',
    ADMIN_EMAIL: admin.email,
    ADMIN_PASSWORD: admin.password,
    RATE_LIMIT: '100000000',
    AUTH_RATE_LIMIT: '100000000',
    ...env,
  };
  if (env.REDIS_URL === undefined) {
    delete appEnv.REDIS_URL;
  }
  const nodeArgs = (process.env.BENCH_APP_NODE_ARGS ?? '').split(/\s+/).filter(Boolean);
  const [command, ...args] = [...wrap, process.execPath, ...nodeArgs, mainJs];
  const proc = spawn(command, args, { cwd: root, env: appEnv, stdio: 'ignore' });
  const exited = new Promise((r) => proc.once('exit', r));
  let stopped = false;
  const stop = () => {
    if (!stopped) {
      stopped = true;
      if (proc.exitCode === null) {
        proc.kill('SIGTERM');
      }
      rmSync(workDir, { recursive: true, force: true });
    }
    return proc.exitCode === null ? exited : Promise.resolve();
  };
  try {
    await waitReady(proc, `${url}/health/ready`, readyTimeoutMs);
  } catch (err) {
    stop();
    throw err;
  }
  return { url, proc, stop, dbPath };
}

/**
 * The data of the GraphQL page of 20 users with their posts (bench/run.mjs, bench/instructions.mjs):
 * 18 more users and 5 posts, made by the admin whose `auth` headers are given.
 */
export async function seedUsersWithPosts(url, auth) {
  const created = await post(
    `${url}/graphql`,
    {
      query: 'mutation($in: [CreateUserInput!]!) { bulkCreate(input: $in) { id } }',
      variables: {
        in: Array.from({ length: 18 }, (_, i) => ({
          name: `Bench ${i}`,
          email: `bench-${i}@example.com`,
        })),
      },
    },
    auth,
  );
  if (created.json?.errors) {
    throw new Error(`bulkCreate: ${JSON.stringify(created.json.errors).slice(0, 300)}`);
  }
  for (let i = 0; i < 5; i++) {
    await post(`${url}/api/v1/posts`, { title: `Post ${i}`, body: 'bench' }, auth);
  }
}

/** p50, p99 and max of latencies (sorts `values` in place), and how many there are. */
export function quantiles(values) {
  values.sort((a, b) => a - b);
  const q = (p) => values[Math.min(values.length - 1, Math.floor(p * values.length))] ?? 0;
  return { p50: q(0.5), p99: q(0.99), max: values.at(-1) ?? 0, n: values.length };
}

/**
 * The well-behaved client's GraphQL request, `{ me { id name } }` with `headers`: resolves to its
 * latency in ms (until the body is read), the HTTP status and the parsed body.
 */
export async function timedMeQuery(app, headers) {
  const t0 = performance.now();
  const res = await fetch(`${app}/graphql`, {
    method: 'POST',
    headers: { ...headers, 'content-type': 'application/json' },
    body: JSON.stringify({ query: '{ me { id name } }' }),
  });
  const body = await res.json();
  return { ms: performance.now() - t0, status: res.status, body };
}
