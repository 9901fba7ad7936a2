// The rate limiter's cost per request, measured so that a busy machine does not drown it: the same
// authenticated GET /api/v1/users/:id on two instances of the built app, limiter on and off
// (RATE_LIMIT_ENABLED), load alternating between them in short rounds (ABBA...), server CPU time per
// request read from /proc for each round, and the median of the per-round differences reported.
// Usage: npm run build && [REDIS_URL=redis://127.0.0.1:6379] node bench/limiter-overhead.mjs
// Environment: LIMITER_ROUNDS (8), LIMITER_ROUND_S (3), BENCH_CONNECTIONS (10); REDIS_URL set =
// counters in Redis (the production set-up), unset = in-process counters; BENCH_APP_NODE_ARGS as in
// bench/run.mjs. Linux only (/proc).
// `npm run bench -- --only rest-get-user-limiter-on,rest-get-user-limiter-off` is the same pair,
// measured once each, in the main benchmark table.
import autocannon from 'autocannon';
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const rounds = Number(process.env.LIMITER_ROUNDS ?? 8);
const roundS = Number(process.env.LIMITER_ROUND_S ?? 3);
const connections = Number(process.env.BENCH_CONNECTIONS ?? 10);
const redisUrl = process.env.REDIS_URL || undefined;

const children = [];
const workDir = mkdtempSync(join(tmpdir(), 'atrium-limiter-'));
process.on('exit', () => {
  for (const c of children) {
    c.kill('SIGKILL');
  }
  rmSync(workDir, { recursive: true, force: true });
});

function freePort() {
  return new Promise((ok, fail) => {
    const srv = createServer();
    srv.on('error', fail);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => ok(port));
    });
  });
}

/** The first two CPUs we may use: servers on one, the load generator (this process) on the other. */
function pinning() {
  const probe = spawnSync('taskset', ['-pc', String(process.pid)], { encoding: 'utf8' });
  if (probe.status !== 0) {
    return undefined;
  }
  const cpus = probe.stdout
    .split(':')
    .pop()
    .trim()
    .split(',')
    .flatMap((part) => {
      const [a, b] = part.split('-').map(Number);
      return b === undefined ? [a] : Array.from({ length: b - a + 1 }, (_, i) => a + i);
    });
  if (cpus.length < 2) {
    return undefined;
  }
  spawnSync('taskset', ['-pc', String(cpus[1]), String(process.pid)]);
  return String(cpus[0]);
}

async function startApp(name, env, cpu) {
  const port = await freePort();
  const nodeArgs = (process.env.BENCH_APP_NODE_ARGS ?? '').split(/\s+/).filter(Boolean); // e.g. --cpu-prof
  const args = [...nodeArgs, join(ROOT, 'dist', 'main.js')];
  const [cmd, argv] =
    cpu === undefined
      ? [process.execPath, args]
      : ['taskset', ['-c', cpu, process.execPath, ...args]];
  const child = spawn(cmd, argv, {
    cwd: ROOT,
    env: { ...env, PORT: String(port) },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  children.push(child);
  const url = `http://127.0.0.1:${port}`;
  for (let i = 0; i < 300; i++) {
    try {
      if ((await fetch(`${url}/health/ready`)).status === 200) {
        return { name, url, pid: child.pid };
      }
    } catch {
      // not listening yet
    }
    await sleep(100);
  }
  throw new Error(`${name} did not become ready`);
}

/** utime + stime in ms. */
function cpuMs(pid) {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return ((Number(f[11]) + Number(f[12])) * 1000) / 100;
}

async function json(method, url, body, headers = {}) {
  const res = await fetch(url, {
    method,
    headers: { 'content-type': 'application/json', ...headers },
    body: body && JSON.stringify(body),
  });
  if (!res.ok) {
    throw new Error(`${method} ${url} -> ${res.status}: ${await res.text()}`);
  }
  return res.json();
}

function load(url, headers, seconds) {
  return autocannon({ url, headers, connections, duration: seconds });
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};

const cpu = pinning();
const common = {
  ...process.env,
  NODE_ENV: 'production',
  HOST: '127.0.0.1',
  PUBLIC_URL: 'http://bench.atrium.test',
  DATABASE_URL: `sqlite:${join(workDir, 'bench.sqlite')}`,
  DATA_DIR: workDir,
  LOG_LEVEL: 'warn',
  ADMIN_EMAIL: 'bench-admin@example.com',
  ADMIN_PASSWORD: 'bench-password-123',
  RATE_LIMIT: '1000000000',
  REDIS_PREFIX: `atrium-limiter-bench-${process.pid}:`,
};
if (!redisUrl) {
  delete common.REDIS_URL;
}
const on = await startApp('limiter on', { ...common, RATE_LIMIT_ENABLED: 'true' }, cpu);
const off = await startApp('limiter off', { ...common, RATE_LIMIT_ENABLED: 'false' }, cpu);

const { access_token: token } = await json('POST', `${on.url}/api/v1/auth/token`, {
  email: common.ADMIN_EMAIL,
  password: common.ADMIN_PASSWORD,
});
const auth = { authorization: `Bearer ${token}` };
const user = await json(
  'POST',
  `${on.url}/api/v1/users`,
  { name: 'Bench User', email: `u${process.pid}@example.com` },
  auth,
);
const path = `/api/v1/users/${user.data.id}`;

console.log(
  `limiter overhead: ${rounds} rounds of ${roundS}s per instance, ${connections} connections, ` +
    `counters ${redisUrl ? 'in Redis' : 'in process'}, servers ${cpu === undefined ? 'unpinned' : `on CPU ${cpu}`}`,
);
for (const app of [on, off]) {
  await load(`${app.url}${path}`, auth, 2); // warm-up
}

const samples = { [on.name]: [], [off.name]: [] };
const diffs = [];
for (let round = 0; round < rounds; round++) {
  const order = round % 2 === 0 ? [on, off] : [off, on];
  const us = {};
  for (const app of order) {
    const before = cpuMs(app.pid);
    const r = await load(`${app.url}${path}`, auth, roundS);
    const cpuUs = ((cpuMs(app.pid) - before) * 1000) / r.requests.total;
    if (r.non2xx > 0 || r.errors > 0) {
      throw new Error(`${app.name}: ${r.non2xx} non-2xx, ${r.errors} errors`);
    }
    samples[app.name].push({ cpuUs, rps: r.requests.average });
    us[app.name] = cpuUs;
  }
  diffs.push(us[on.name] - us[off.name]);
  console.log(
    `  round ${round + 1}: on ${us[on.name].toFixed(0)} µs, off ${us[off.name].toFixed(0)} µs CPU per request`,
  );
}

for (const app of [on, off]) {
  const s = samples[app.name];
  console.log(
    `${app.name.padEnd(12)} median ${median(s.map((x) => x.cpuUs)).toFixed(1)} µs CPU per request, ` +
      `median ${median(s.map((x) => x.rps)).toFixed(0)} req/s`,
  );
}
const d = median(diffs);
console.log(
  `overhead: ${d.toFixed(1)} µs CPU per request (median of ${rounds} paired rounds; ` +
    `range ${Math.min(...diffs).toFixed(0)}..${Math.max(...diffs).toFixed(0)}), ` +
    `${((d / median(samples[off.name].map((x) => x.cpuUs))) * 100).toFixed(1)}% of the request's CPU`,
);
for (const c of children) {
  c.kill('SIGTERM'); // lets --cpu-prof write its profile
}
await sleep(1500);
process.exit(0);
