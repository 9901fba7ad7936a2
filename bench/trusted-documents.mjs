// A GraphQL request by `documentId` (trusted documents) against the same operation sent as text.
//
//   npm run bench -- --trusted-documents
//
// Starts the built app (dist/main.js, embedded SQLite) with a manifest of one operation
// (GRAPHQL_TRUSTED_DOCUMENTS, mode `enforce`), signs the boot admin in, then alternates two loads of
// `query Me { me { id name } }` with a Bearer token: its text in the body (the listed body, so it
// runs in `enforce`), and `{"documentId": "me-v1"}`. BENCH_ROUNDS (default 3) rounds of
// BENCH_DURATION seconds (default 5) each, after BENCH_WARMUP seconds (default 2) of each shape;
// server CPU per request from /proc (the app pinned to one CPU and the load generator to another
// when `taskset` exists). Prints each round and the median ratio documentId / text of CPU per request.
// With `--instructions`, the app runs under callgrind instead and each shape's mutator instructions
// per request are counted as bench/instructions.mjs counts them (independent of the machine's load).
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { callgrind, count, send } from './instructions.mjs';
import { pacedLoad } from './paced-load.mjs';
import { cpuMs, post, startBuiltApp } from './plumbing.mjs';

const ADMIN = { email: 'bench-admin@example.com', password: 'bench-password-123' };
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const DURATION = Number(process.env.BENCH_DURATION ?? 5);
const WARMUP = Number(process.env.BENCH_WARMUP ?? 2);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 10);
const QUERY = 'query Me { me { id name } }';

const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];

export async function runTrustedDocuments({ root, instructions = false }) {
  const pin =
    !instructions && spawnSync('taskset', ['-V']).status === 0 && !process.env.BENCH_NO_PIN;
  if (pin) {
    spawnSync('taskset', ['-cp', process.env.BENCH_CLIENT_CPU ?? '1', String(process.pid)]);
  }
  const dir = mkdtempSync(join(tmpdir(), 'atrium-trusted-bench-'));
  const manifest = join(dir, 'manifest.json');
  writeFileSync(
    manifest,
    JSON.stringify({
      format: 'apollo-persisted-query-manifest',
      version: 1,
      operations: [{ id: 'me-v1', name: 'Me', type: 'query', body: QUERY }],
    }),
  );
  const app = await startBuiltApp({
    root,
    name: 'trusted',
    admin: ADMIN,
    env: {
      GRAPHQL_TRUSTED_DOCUMENTS: manifest,
      GRAPHQL_TRUSTED_DOCUMENTS_MODE: 'enforce',
      // the cost budget counts but never refuses, as RATE_LIMIT does for requests
      GRAPHQL_COST_BUDGET: '1000000000',
    },
    wrap: instructions
      ? callgrind(join(dir, 'app.callgrind'))
      : pin
        ? ['taskset', '-c', process.env.BENCH_SERVER_CPU ?? '0']
        : [],
    ...(instructions ? { readyTimeoutMs: 300_000 } : {}),
  });
  try {
    const token = (await post(`${app.url}/api/v1/auth/token`, ADMIN)).json.access_token;
    const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
    const shapes = [
      { name: 'text', body: JSON.stringify({ query: QUERY }) },
      { name: 'documentId', body: JSON.stringify({ documentId: 'me-v1' }) },
    ];
    for (const shape of shapes) {
      const once = await post(`${app.url}/graphql`, JSON.parse(shape.body), headers);
      if (!once.json?.data?.me) {
        throw new Error(`${shape.name}: ${JSON.stringify(once.json).slice(0, 300)}`);
      }
    }
    if (instructions) {
      await countShapes(app, dir, shapes, headers);
      return;
    }
    const load = (shape, duration) =>
      pacedLoad({
        url: `${app.url}/graphql`,
        method: 'POST',
        headers,
        body: shape.body,
        rate: Infinity,
        duration,
        connections: CONNECTIONS,
      });
    for (const shape of shapes) {
      if (WARMUP > 0) {
        await load(shape, WARMUP);
      }
    }
    const ratios = [];
    const perShape = { text: [], documentId: [] };
    for (let round = 1; round <= ROUNDS; round++) {
      const row = {};
      for (const shape of shapes) {
        const before = cpuMs(app.proc.pid);
        const result = await load(shape, DURATION);
        const cpu = cpuMs(app.proc.pid) - before;
        const failed = result.non2xx + result.errors + result.timeouts;
        if (failed > 0) {
          throw new Error(
            `${shape.name}: ${failed} failed requests (${JSON.stringify(result.statusCodeStats)})`,
          );
        }
        const us = (cpu * 1000) / result.requests.total;
        row[shape.name] = { us, rps: result.requests.average, p50: result.latency.p50 };
        perShape[shape.name].push(us);
      }
      ratios.push(row.documentId.us / row.text.us);
      console.log(
        `round ${round}: text ${row.text.us.toFixed(0)} µs CPU/request (${row.text.rps.toFixed(0)} req/s, p50 ${row.text.p50.toFixed(1)} ms), ` +
          `documentId ${row.documentId.us.toFixed(0)} µs CPU/request (${row.documentId.rps.toFixed(0)} req/s, p50 ${row.documentId.p50.toFixed(1)} ms), ` +
          `ratio ${(row.documentId.us / row.text.us).toFixed(3)}`,
      );
    }
    console.log(
      `median: text ${median(perShape.text).toFixed(0)} µs, documentId ${median(perShape.documentId).toFixed(0)} µs CPU/request; ` +
        `documentId / text = ${median(ratios).toFixed(3)} (${ROUNDS} rounds of ${DURATION} s, ${CONNECTIONS} connections${pin ? ', pinned' : ''})`,
    );
  } finally {
    await app.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Mutator instructions per request of each shape, the app under callgrind (bench/instructions.mjs). */
async function countShapes(app, dir, shapes, headers) {
  // startBuiltApp sets HOST=127.0.0.1, which valgrind names its control files after
  const server = {
    name: 'trusted',
    url: app.url,
    pid: app.proc.pid,
    outFile: join(dir, 'app.callgrind'),
    host: '127.0.0.1',
  };
  const scenarios = shapes.map((shape) => ({
    name: shape.name,
    method: 'POST',
    path: '/graphql',
    headers,
    body: shape.body,
  }));
  // both warmed up before either is counted (the shared request path compiles meanwhile)
  for (const scenario of scenarios) {
    await send(server, scenario, Number(process.env.BENCH_INSTR_WARMUP ?? 3000));
  }
  const rows = {};
  for (const scenario of scenarios) {
    rows[scenario.name] = await count(server, {
      ...scenario,
      warmup: Math.ceil(Number(process.env.BENCH_INSTR_WARMUP ?? 3000) / 5),
    });
  }
  console.log(
    `mutator instructions per request: text ${Math.round(rows.text.mutator)}, documentId ` +
      `${Math.round(rows.documentId.mutator)}; documentId / text = ` +
      `${(rows.documentId.mutator / rows.text.mutator).toFixed(3)}`,
  );
}
