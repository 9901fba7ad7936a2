// Instructions per request, counted by valgrind's callgrind: the user-space work of one request
// (JavaScript, V8, Node, SQLite), without the kernel and independent of what else the machine does.
// Separate runs of one build differ by up to ~7 % (when V8 optimises what, when the collector runs):
// compare builds in one run (--compare). CPU time per request swings by 10-25 % between rounds on a
// shared machine (bench/README.md).
//
//   npm run bench -- --instructions [--compare <another checkout, built>] [--tracing]
//
// Starts the bare Fastify handler (bench/bare-server.mjs) and the built app (dist/main.js, embedded
// SQLite) under `valgrind --tool=callgrind` with instrumentation off, warms each scenario up with
// BENCH_INSTR_WARMUP requests (default 3000; V8 compiles the hot paths meanwhile; every scenario is
// warmed up before the first count, and again with a fifth of that right before its own), then counts
// BENCH_INSTR_REQUESTS requests (default 1000) with instrumentation on, 10 at a time (the GraphQL
// page of 20 users with 5 posts each, ~8x a REST GET's work: a quarter of each).
// Each server runs with `--separate-threads=yes`, and each count is split (bench/callgrind-split.mjs)
// into the mutator (the request's own work: JavaScript, builtins, Node, SQLite), the collector and the
// compilers on the main thread, and V8's background threads: the collector's and the compilers' work
// lands in a window or not by luck (totals moved up to 2.5x between runs), the mutator reproduces
// within a few percent. Ratios are taken on the mutator; totals are printed next to them.
// BENCH_INSTR_ONLY=<name>[,<name>] counts only the scenarios so named; BENCH_INSTR_TOP=<n> prints
// the n functions with the most instructions of each count.
// Needs valgrind (Debian: `apt-get install -y valgrind`).
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { splitDump } from './callgrind-split.mjs';
import { freePort, post, seedUsersWithPosts, startBuiltApp, waitReady } from './plumbing.mjs';
import { startOtlpSink } from './tracing.mjs';

const ADMIN_EMAIL = 'bench-admin@example.com';
const ADMIN_PASSWORD = 'bench-password-123';
const WARMUP = Number(process.env.BENCH_INSTR_WARMUP ?? 3000);
const REQUESTS = Number(process.env.BENCH_INSTR_REQUESTS ?? 1000);
const CONCURRENCY = 10;
/** Node's start under valgrind takes 10-30 s here. */
const READY_TIMEOUT_MS = 300_000;

/**
 * `compare`: the root of another built checkout, counted the same way after this one. `tracing`: this
 * build twice, first exporting every request's spans to a local OTLP sink (bench/tracing.mjs), then
 * without an OTLP endpoint (the ` @untraced` rows).
 */
export async function runInstructions({ root, compare, tracing = false }) {
  if (spawnSync('valgrind', ['--version']).status !== 0) {
    throw new Error('valgrind is not installed (Debian: apt-get install -y valgrind)');
  }
  const workDir = mkdtempSync(join(tmpdir(), 'atrium-instr-'));
  const stops = [];
  try {
    const bare = await startBare(root, workDir, stops);
    const rows = [];
    const barePath = '/api/v1/users/usr_bench';
    rows.push({
      name: 'bare',
      // as warm as the app's scenarios: their warm-up and a fifth of it again
      ...(await count(bare, {
        name: 'bare',
        method: 'GET',
        path: barePath,
        warmup: Math.ceil(WARMUP * 1.2),
      })),
    });
    const sink = tracing ? await startOtlpSink() : undefined;
    const apps = [
      [sink ? ' traced' : '', root, sink?.env],
      ...(sink ? [[' @untraced', root]] : []),
      ...(compare ? [[' @compare', compare]] : []),
    ];
    for (const [label, checkout, env] of apps) {
      const app = await startApp(resolve(checkout), workDir, stops, label, env);
      const auth = { authorization: `Bearer ${app.token}` };
      const scenarios = [
        {
          name: 'rest-get-user-bearer',
          method: 'GET',
          path: `/api/v1/users/${app.userId}`,
          headers: auth,
        },
        {
          // the same GET from a client that accepts compression (browsers, fetch): the answer is under
          // the 1 KiB threshold, so this counts what deciding not to compress costs
          name: 'rest-get-user-bearer accept-encoding',
          method: 'GET',
          path: `/api/v1/users/${app.userId}`,
          headers: { ...auth, 'accept-encoding': 'gzip, deflate, br' },
        },
        {
          name: 'gql user(id)',
          method: 'POST',
          path: '/graphql',
          headers: { ...auth, 'content-type': 'application/json' },
          body: JSON.stringify({
            query: 'query($id: ID!) { user(id: $id) { id name email } }',
            variables: { id: app.userId },
          }),
        },
        {
          name: 'gql 20 users with posts',
          method: 'POST',
          path: '/graphql',
          headers: { ...auth, 'content-type': 'application/json' },
          body: JSON.stringify({
            query:
              '{ users(first: 20) { nodes { id name posts(first: 5) { totalCount nodes { id title } } } } }',
          }),
          // the page's instructions are ~8x a REST GET's: fewer requests give the same precision
          warmup: Math.ceil(WARMUP / 4),
          requests: Math.ceil(REQUESTS / 4),
        },
      ];
      // BENCH_INSTR_ONLY=<name>[,<name>]: only the scenarios so named
      const only = process.env.BENCH_INSTR_ONLY?.split(',');
      const chosen = only ? scenarios.filter((s) => only.includes(s.name)) : scenarios;
      // every scenario warmed up before any is counted: the first one counted after its own
      // warm-up alone still ran while V8 compiled the shared request path (~6 % more mutator
      // instructions, half a million background instructions per request)
      for (const scenario of chosen) {
        await send(app, scenario, scenario.warmup ?? WARMUP);
      }
      for (const scenario of chosen) {
        const warmup = Math.ceil((scenario.warmup ?? WARMUP) / 5);
        rows.push({ name: scenario.name + label, ...(await count(app, { ...scenario, warmup })) });
      }
    }
    if (sink) {
      console.log(sink.describe());
    }
    const base = rows[0];
    console.log(
      '\nscenario                            mutator/request  vs bare   gc/req  jit/req  bg/req   total/req  vs bare',
    );
    for (const row of rows) {
      const n = (v) => String(Math.round(v)).padStart(8);
      console.log(
        `${row.name.padEnd(36)}${String(Math.round(row.mutator)).padStart(15)}  ${(row.mutator / base.mutator).toFixed(2).padStart(6)}x ` +
          `${n(row.gc)} ${n(row.jit)} ${n(row.background)} ${String(Math.round(row.perRequest)).padStart(11)}  ${(row.perRequest / base.perRequest).toFixed(2).padStart(6)}x`,
      );
    }
    return rows;
  } finally {
    await Promise.all(stops.map((stop) => stop()));
    rmSync(workDir, { recursive: true, force: true });
  }
}

/** The built app of `checkout` under callgrind, with the data of the scenarios. */
async function startApp(checkout, workDir, stops, label, env = {}) {
  const name = `app${label.trim().replace(/^@/, '-')}`;
  const outFile = join(workDir, `${name}.callgrind`);
  const app = await startBuiltApp({
    root: checkout,
    name: `instr-${name}`,
    admin: { email: ADMIN_EMAIL, password: ADMIN_PASSWORD },
    env: { GRAPHQL_COST_BUDGET: '1000000000', ...env },
    wrap: callgrind(outFile),
    readyTimeoutMs: READY_TIMEOUT_MS,
  });
  stops.push(app.stop);
  console.log(`${name} ready under callgrind on ${app.url}`);
  const token = (
    await post(`${app.url}/api/v1/auth/token`, { email: ADMIN_EMAIL, password: ADMIN_PASSWORD })
  ).json.access_token;
  const auth = { authorization: `Bearer ${token}` };
  const user = await post(
    `${app.url}/api/v1/users`,
    { name: 'Bench User', email: 'bench-user@example.com' },
    auth,
  );
  await seedUsersWithPosts(app.url, auth);
  // startBuiltApp sets HOST=127.0.0.1, which valgrind names its control files after (see control)
  return {
    name,
    url: app.url,
    pid: app.proc.pid,
    outFile,
    host: '127.0.0.1',
    token,
    userId: user.json.data.id,
  };
}

/** valgrind's command line: callgrind, instrumentation off until `count` turns it on. */
export function callgrind(outFile) {
  return [
    'valgrind',
    '--tool=callgrind',
    '--instr-atstart=no',
    '--separate-threads=yes',
    `--callgrind-out-file=${outFile}`,
  ];
}

/** The bare Fastify handler (bench/bare-server.mjs) under callgrind. */
async function startBare(root, workDir, stops) {
  const port = await freePort();
  const outFile = join(workDir, 'bare.callgrind');
  const env = { ...process.env, BARE_PORT: String(port), BARE_USER_ID: 'usr_bench' };
  delete env.HOST;
  const child = spawn(
    'valgrind',
    [...callgrind(outFile).slice(1), process.execPath, join(root, 'bench/bare-server.mjs')],
    { env, stdio: 'ignore' },
  );
  stops.push(() => child.kill('SIGKILL'));
  const url = `http://127.0.0.1:${port}`;
  await waitReady(child, `${url}/health/ready`, READY_TIMEOUT_MS);
  console.log(`bare ready under callgrind on ${url}`);
  return { name: 'bare', url, pid: child.pid, outFile, host: undefined };
}

/**
 * Warm-up, then the instructions of REQUESTS requests (instrumentation on only meanwhile); a
 * scenario may set its own `warmup` and `requests`.
 */
export async function count(server, scenario) {
  const { warmup = WARMUP, requests = REQUESTS } = scenario;
  await send(server, scenario, warmup);
  control(server, ['--zero']);
  control(server, ['--instr=on']);
  await send(server, scenario, requests);
  control(server, ['--instr=off']);
  control(server, ['--dump']);
  const split = splitDump(server.outFile);
  const per = (v) => v / requests;
  console.log(
    `  ${scenario.name} on ${server.name}: ${Math.round(per(split.mutator))} mutator instructions per ` +
      `request (gc ${Math.round(per(split.gc))}, jit ${Math.round(per(split.jit))}, background ` +
      `${Math.round(per(split.background))}, total ${Math.round(per(split.total))})`,
  );
  if (process.env.BENCH_INSTR_TOP) {
    for (const [name, self] of split.top.slice(0, Number(process.env.BENCH_INSTR_TOP))) {
      console.log(`    ${String(Math.round(per(self))).padStart(8)}  ${name.slice(0, 150)}`);
    }
  }
  return {
    instructions: split.total,
    perRequest: per(split.total),
    mutator: per(split.mutator),
    gc: per(split.gc),
    jit: per(split.jit),
    background: per(split.background),
  };
}

function control(server, args) {
  const env = { ...process.env };
  if (server.host === undefined) {
    delete env.HOST;
  } else {
    env.HOST = server.host;
  }
  const r = spawnSync('callgrind_control', [...args, String(server.pid)], {
    encoding: 'utf8',
    env,
  });
  if (r.status !== 0) {
    throw new Error(`callgrind_control ${args.join(' ')}: ${r.stderr || r.stdout}`);
  }
}

export async function send(server, scenario, n) {
  let next = 0;
  const worker = async () => {
    while (next < n) {
      next += 1;
      const res = await fetch(`${server.url}${scenario.path}`, {
        method: scenario.method,
        // fetch asks for gzip by default: the bare handler and the load scenarios of bench/run.mjs
        // do not (a compressed GraphQL page cost ~0.4 M instructions more); a scenario may ask
        headers: { accept: 'application/json', 'accept-encoding': 'identity', ...scenario.headers },
        body: scenario.body,
      });
      const text = await res.text();
      if (res.status !== 200 || text.includes('"errors"')) {
        throw new Error(`${scenario.name}: HTTP ${res.status} ${text.slice(0, 200)}`);
      }
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
}
