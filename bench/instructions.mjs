// Instructions per request, counted by valgrind's callgrind: the user-space work of one request
// (JavaScript, V8, Node, SQLite), without the kernel and independent of what else the machine does.
// Separate runs of one build differ by up to ~7 % (when V8 optimises what, when the collector runs):
// compare builds in one run (--compare). CPU time per request swings by 10-25 % between rounds on a
// shared machine (bench/README.md).
//
//   npm run bench -- --instructions [--compare <another checkout, built>]
//
// Starts the bare Fastify handler (bench/bare-server.mjs) and the built app (dist/main.js, embedded
// SQLite) under `valgrind --tool=callgrind` with instrumentation off, warms each scenario up with
// BENCH_INSTR_WARMUP requests (default 3000; V8 compiles the hot paths meanwhile), then counts
// BENCH_INSTR_REQUESTS requests (default 1000) with instrumentation on, 10 at a time (the GraphQL
// page of 20 users with 5 posts each, ~8x a REST GET's work: a quarter of each).
// Needs valgrind (Debian: `apt-get install -y valgrind`).
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join, resolve } from 'node:path';
import { freePort, post, waitReady } from './plumbing.mjs';

const ADMIN_EMAIL = 'bench-admin@example.com';
const ADMIN_PASSWORD = 'bench-password-123';
const WARMUP = Number(process.env.BENCH_INSTR_WARMUP ?? 3000);
const REQUESTS = Number(process.env.BENCH_INSTR_REQUESTS ?? 1000);
const CONCURRENCY = 10;

/** `compare`: the root of another built checkout, counted the same way after this one. */
export async function runInstructions({ root, compare }) {
  if (spawnSync('valgrind', ['--version']).status !== 0) {
    throw new Error('valgrind is not installed (Debian: apt-get install -y valgrind)');
  }
  const workDir = mkdtempSync(join(tmpdir(), 'atrium-instr-'));
  const children = [];
  try {
    const bare = await startUnderCallgrind(
      'bare',
      [join(root, 'bench/bare-server.mjs')],
      { BARE_PORT: String(await freePort()), BARE_USER_ID: 'usr_bench' },
      workDir,
      children,
    );
    const rows = [];
    const barePath = '/api/v1/users/usr_bench';
    rows.push({ name: 'bare', ...(await count(bare, { method: 'GET', path: barePath })) });
    for (const [label, checkout] of [['', root], ...(compare ? [[' @compare', compare]] : [])]) {
      const app = await startApp(resolve(checkout), workDir, children, label);
      const auth = { authorization: `Bearer ${app.token}` };
      const scenarios = [
        {
          name: 'rest-get-user-bearer',
          method: 'GET',
          path: `/api/v1/users/${app.userId}`,
          headers: auth,
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
      for (const scenario of scenarios) {
        rows.push({ name: scenario.name + label, ...(await count(app, scenario)) });
      }
    }
    const base = rows[0].perRequest;
    console.log('\nscenario                          instructions/request   vs bare');
    for (const row of rows) {
      console.log(
        `${row.name.padEnd(34)}${String(Math.round(row.perRequest)).padStart(20)}   ${(row.perRequest / base).toFixed(2)}x`,
      );
    }
    return rows;
  } finally {
    for (const child of children) {
      child.kill('SIGKILL');
    }
    rmSync(workDir, { recursive: true, force: true });
  }
}

async function startApp(checkout, workDir, children, label) {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const app = await startUnderCallgrind(
    `app${label.trim()}`,
    [join(checkout, 'dist/main.js')],
    {
      NODE_ENV: 'production',
      PORT: String(port),
      HOST: '127.0.0.1',
      PUBLIC_URL: url,
      DATABASE_URL: `sqlite:${join(workDir, `app-${port}.sqlite`)}`,
      LOG_LEVEL: 'warn',
      ADMIN_EMAIL,
      ADMIN_PASSWORD,
      RATE_LIMIT: '100000000',
      GRAPHQL_COST_BUDGET: '1000000000',
    },
    workDir,
    children,
    checkout,
  );
  const token = (
    await post(`${url}/api/v1/auth/token`, { email: ADMIN_EMAIL, password: ADMIN_PASSWORD })
  ).json.access_token;
  const auth = { authorization: `Bearer ${token}` };
  const user = await post(
    `${url}/api/v1/users`,
    { name: 'Bench User', email: 'bench-user@example.com' },
    auth,
  );
  // the data of bench/run.mjs's 20 × 5 page: 18 more users and 5 posts by the admin
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
  return { ...app, token, userId: user.json.data.id };
}

async function startUnderCallgrind(name, argv, env, workDir, children, cwd = process.cwd()) {
  const port = Number(env.PORT ?? env.BARE_PORT);
  const outFile = join(workDir, `${name}.callgrind`);
  const child = spawn(
    'valgrind',
    [
      '--tool=callgrind',
      '--instr-atstart=no',
      `--callgrind-out-file=${outFile}`,
      process.execPath,
      ...argv,
    ],
    { cwd, env: { ...process.env, ...env }, stdio: ['ignore', 'ignore', 'pipe'] },
  );
  children.push(child);
  let stderr = '';
  child.stderr.on('data', (chunk) => (stderr = (stderr + chunk).slice(-4000)));
  const url = `http://127.0.0.1:${port}`;
  try {
    await waitReady(child, `${url}/health/ready`, 300_000);
  } catch (error) {
    throw new Error(`${name} did not start under valgrind: ${error.message}\n${stderr}`);
  }
  console.log(`${name} ready under callgrind on ${url}`);
  // valgrind names its control files after HOST, which is also the app's listen address here:
  // callgrind_control must see the same value to find them
  return { name, url, pid: child.pid, outFile, host: env.HOST };
}

/**
 * Warm-up, then the instructions of REQUESTS requests (instrumentation on only meanwhile); a
 * scenario may set its own `warmup` and `requests`.
 */
async function count(server, scenario) {
  const { warmup = WARMUP, requests = REQUESTS } = scenario;
  await send(server, scenario, warmup);
  control(server, ['--zero']);
  control(server, ['--instr=on']);
  await send(server, scenario, requests);
  control(server, ['--instr=off']);
  control(server, ['--dump']);
  const instructions = lastTotal(server.outFile);
  const perRequest = instructions / requests;
  console.log(
    `  ${scenario.name} on ${server.name}: ${Math.round(perRequest)} instructions per request`,
  );
  return { instructions, perRequest };
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

/** The `totals:` of the newest dump (callgrind writes dump n as `<file>.<n>`). */
function lastTotal(outFile) {
  const dir = dirname(outFile);
  const prefix = `${basename(outFile)}.`;
  const dumps = readdirSync(dir)
    .filter((f) => f.startsWith(prefix) && /^\d+$/.test(f.slice(prefix.length)))
    .sort((a, b) => Number(b.slice(prefix.length)) - Number(a.slice(prefix.length)));
  const newest = join(dir, dumps[0] ?? basename(outFile));
  const text = readFileSync(newest, 'utf8');
  const totals = /^totals: *(\d+)/m.exec(text);
  if (!totals) {
    throw new Error(`no totals in ${newest} (${dumps.length} dumps)`);
  }
  return Number(totals[1]);
}

async function send(server, scenario, n) {
  let next = 0;
  const worker = async () => {
    while (next < n) {
      next += 1;
      const res = await fetch(`${server.url}${scenario.path}`, {
        method: scenario.method,
        headers: { accept: 'application/json', ...scenario.headers },
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
