// Hostile GraphQL documents against the built app while a well-behaved client measures its latency.
// Starts `node dist/main.js` (SQLite file in a temporary directory, NODE_ENV=production, the default
// cost budget, a request rate limit that load cannot exhaust so the hostile loops are not simply
// answered 429), seeds 100 posts of 50 000 characters and a hostile USER, then runs one phase per
// hostile document: BENCH_HOSTILE_CONCURRENCY (4) loops send it over and over for
// BENCH_HOSTILE_SECONDS (5) while one client (the admin) sends `{ me { id name } }` sequentially,
// 20 ms apart; a last phase opens 50 subscriptions of the hostile user and posts 10 messages/s.
// Prints per phase the hostile requests sent and their answers, the good client's p50/p99/max
// latency and the app's peak RSS (sampled from /proc every 20 ms). BENCH_PHASES=<text> runs only the
// phases whose name contains it.
//
//   npm run build && node bench/hostile-graphql.mjs
//   BENCH_APP_DIR=/path/to/other/checkout node bench/hostile-graphql.mjs   # another build
//
// See bench/README.md.
import { readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { createClient } from 'graphql-ws';
import WebSocket from 'ws';
import { cpuMs, post, quantiles, startBuiltApp, timedMeQuery } from './plumbing.mjs';

const ROOT = resolve(
  process.env.BENCH_APP_DIR ?? join(dirname(fileURLToPath(import.meta.url)), '..'),
);
const SECONDS = Number(process.env.BENCH_HOSTILE_SECONDS ?? 5);
const CONCURRENCY = Number(process.env.BENCH_HOSTILE_CONCURRENCY ?? 4);
const ADMIN_EMAIL = 'bench-admin@example.com';
const ADMIN_PASSWORD = 'bench-password-123';
const MALLORY = {
  name: 'Mallory',
  password: 'mallory-password-123',
  role: 'USER',
};

const rep = (n, f) => Array.from({ length: n }, (_, i) => f(i)).join(' ');

/** The hostile documents of the issue (items 1 and 2). */
const HOSTILE = [
  {
    name: 'alias flood: 1000 x posts(first: 100) { body }',
    auth: true,
    query: `{ ${rep(1000, (i) => `p${i}: posts(first: 100) { body }`)} }`,
  },
  {
    name: 'max-cost bodies: 9 x posts(first: 5) { body } (within limits)',
    auth: true,
    query: `{ ${rep(9, (i) => `p${i}: posts(first: 5) { body }`)} }`,
  },
  { name: '15 KB repeated fields (anonymous)', query: `{ ${rep(1500, () => 'me { id }')} }` },
  { name: '50 KB repeated fields (anonymous)', query: `{ ${rep(5000, () => 'me { id }')} }` },
  {
    name: '80 KB repeated arguments (anonymous)',
    query: `{ users(${rep(8000, () => 'first: 1')}) { totalCount } }`,
  },
  {
    name: '400 KB repeated arguments (anonymous)',
    query: `{ users(${rep(40000, () => 'first: 1')}) { totalCount } }`,
  },
  {
    name: '90 fragments on one field (anonymous)',
    query: `{ me { ${rep(90, (i) => `...F${i}`)} } } ${rep(90, (i) => `fragment F${i} on User { posts(first: 1) { totalCount } }`)}`,
  },
];

let started;

async function main() {
  started = await startBuiltApp({
    root: ROOT,
    name: 'hostile',
    admin: { email: ADMIN_EMAIL, password: ADMIN_PASSWORD },
    env: {
      // the default budget (10 000 points per 60 s) per identity: the good client (the admin) spends
      // ~3 points per request; the hostile identity runs out (heavy queries, subscription events)
      GRAPHQL_COST_BUDGET: process.env.BENCH_COST_BUDGET ?? '10000',
      WS_MAX_CONNECTIONS_PER_IDENTITY: '100000',
      WS_MAX_OPERATIONS_PER_CONNECTION: '100000',
    },
  });
  const { url: app, proc } = started;

  const token = (
    await post(`${app}/api/v1/auth/token`, { email: ADMIN_EMAIL, password: ADMIN_PASSWORD })
  ).json.access_token;
  const auth = { authorization: `Bearer ${token}` };
  // a fresh hostile USER per phase (registration is open), each with its own cost budget
  let mallories = 0;
  const mallory = async () => {
    const who = { ...MALLORY, email: `mallory-${++mallories}@example.com` };
    await post(`${app}/api/v1/users`, who, auth);
    return (await post(`${app}/api/v1/auth/token`, { email: who.email, password: who.password }))
      .json.access_token;
  };
  const body = 'x'.repeat(50_000);
  for (let i = 0; i < 100; i++) {
    await post(`${app}/api/v1/posts`, { title: `big ${i}`, body }, auth);
  }
  const room = (await post(`${app}/api/v1/rooms`, { name: `hostile-${Date.now()}` }, auth)).json
    .data.id;

  const rss = rssSampler(proc.pid);
  const rows = [];
  rows.push(await phase('baseline (no hostile traffic)', app, auth, rss, undefined));
  const only = process.env.BENCH_PHASES; // e.g. "repeated" runs only the phases whose name has it
  for (const h of HOSTILE.filter((x) => !only || x.name.includes(only))) {
    const hostileAuth = { authorization: `Bearer ${await mallory()}` };
    rows.push(
      await phase(h.name, app, auth, rss, () =>
        sendGraphql(app, h.query, h.auth ? hostileAuth : {}),
      ),
    );
  }
  if (!only || '50 subscriptions'.includes(only)) {
    const token = await mallory();
    rows.push(
      await phase('50 subscriptions x 4 post bodies, 10 messages/s', app, auth, rss, undefined, {
        setup: () => subscriptions(app, token, room, 50),
        tick: () => post(`${app}/api/v1/rooms/${room}/messages`, { content: 'ping' }, auth),
      }),
    );
  }
  rss.stop();

  console.log(
    `\nhostile GraphQL bench: ${SECONDS} s per phase, ${CONCURRENCY} hostile loops, app ${ROOT}\n`,
  );
  console.log(
    [
      'phase'.padEnd(58),
      'hostile'.padStart(8),
      'answers'.padEnd(34),
      'good p50'.padStart(9),
      'p99'.padStart(8),
      'max'.padStart(8),
      'good n'.padStart(7),
      'RSS peak'.padStart(9),
      'app CPU'.padStart(8),
      'CPU/hostile'.padStart(12),
    ].join(' '),
  );
  for (const r of rows) {
    console.log(
      [
        r.name.slice(0, 58).padEnd(58),
        String(r.sent).padStart(8),
        r.answers.slice(0, 34).padEnd(34),
        `${r.p50.toFixed(1)}ms`.padStart(9),
        `${r.p99.toFixed(1)}ms`.padStart(8),
        `${r.max.toFixed(1)}ms`.padStart(8),
        String(r.n).padStart(7),
        `${r.rssPeakMb}MB`.padStart(9),
        `${Math.round(r.cpuBusy * 100)}%`.padStart(8),
        `${r.cpuPerHostile.toFixed(1)}ms`.padStart(12),
      ].join(' '),
    );
  }
  const worst = Math.max(...rows.map((r) => r.p99));
  console.log(`\nworst good-client p99: ${worst.toFixed(1)} ms (target < 100 ms)`);
}

/** One phase: hostile loops (or a ticker) plus the good client, for SECONDS. */
async function phase(name, app, auth, rss, hostile, extra) {
  const stopExtra = extra?.setup ? await extra.setup() : undefined;
  rss.reset();
  const cpu0 = rss.cpuMs();
  let running = true;
  let sent = 0;
  const answers = new Map();
  const loops = [];
  if (hostile) {
    for (let i = 0; i < CONCURRENCY; i++) {
      loops.push(
        (async () => {
          while (running) {
            const outcome = await hostile().catch((err) => `fail:${err.cause?.code ?? err.name}`);
            sent++;
            answers.set(outcome, (answers.get(outcome) ?? 0) + 1);
          }
        })(),
      );
    }
  }
  if (extra?.tick) {
    loops.push(
      (async () => {
        while (running) {
          await extra.tick();
          sent++;
          await sleep(100);
        }
      })(),
    );
  }
  const latencies = [];
  const good = (async () => {
    while (running) {
      const { ms, body } = await timedMeQuery(app, auth);
      latencies.push(ms);
      if (body.errors) {
        throw new Error(`good client got errors: ${JSON.stringify(body.errors)}`);
      }
      await sleep(20);
    }
  })();
  await sleep(SECONDS * 1000);
  running = false;
  await Promise.all([good, ...loops]);
  const appCpuMs = rss.cpuMs() - cpu0;
  const extraOutcome = await stopExtra?.();
  if (extraOutcome) {
    answers.set(extraOutcome, 1);
  }
  return {
    name,
    sent,
    answers:
      [...answers]
        .map(([k, v]) => (v === 1 && k.includes(':') && k.startsWith('events') ? k : `${k}x${v}`))
        .join(' ') || '-',
    ...quantiles(latencies),
    rssPeakMb: Math.round(rss.peak() / 1024),
    // server CPU per hostile request: independent of what else the machine runs
    cpuPerHostile: sent > 0 ? appCpuMs / sent : 0,
    cpuBusy: appCpuMs / (SECONDS * 1000),
  };
}

/** Sends a document; the outcome is `<status>:<first error code or "data">`. */
async function sendGraphql(app, query, headers) {
  const res = await fetch(`${app}/graphql`, {
    method: 'POST',
    headers: { ...headers, 'content-type': 'application/json' },
    body: JSON.stringify({ query }),
  });
  const text = await res.text();
  let code = 'data';
  try {
    code = JSON.parse(text).errors?.[0]?.extensions?.code ?? 'data';
  } catch {
    code = 'not-json';
  }
  return `${res.status}:${code}`;
}

/** n sockets, each subscribed to the room with a selection of author's post bodies. */
async function subscriptions(app, token, room, n) {
  // 90 points per event (the subscription limit is 100): 4 post bodies of 50 000 characters each
  const query = `subscription($r: ID!) { messageAdded(roomId: $r) { id content author { posts(first: 4) { nodes { body } } } } }`;
  let events = 0;
  let errors = 0;
  const clients = [];
  for (let i = 0; i < n; i++) {
    const client = createClient({
      url: `${app.replace(/^http/, 'ws')}/graphql`,
      webSocketImpl: WebSocket,
      connectionParams: { Authorization: `Bearer ${token}` },
      lazy: false,
      retryAttempts: 0,
      onNonLazyError: () => undefined,
    });
    client.subscribe(
      { query, variables: { r: room } },
      {
        next: (v) => (v.errors ? errors++ : events++),
        error: () => errors++,
        complete: () => undefined,
      },
    );
    clients.push(client);
  }
  await sleep(500);
  return async () => {
    await Promise.all(clients.map((c) => c.dispose()));
    return `events:${events} errors:${errors}`;
  };
}

/** Peak VmRSS (kB) of a process, sampled every 20 ms. */
function rssSampler(pid) {
  let peak = 0;
  const read = () => {
    try {
      const status = readFileSync(`/proc/${pid}/status`, 'utf8');
      const kb = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0);
      peak = Math.max(peak, kb);
    } catch {
      // the process is gone: keep the last peak
    }
  };
  const timer = setInterval(read, 20);
  return {
    peak: () => peak,
    /** user + system CPU time of the process so far, in ms (clock ticks of 10 ms) */
    cpuMs: () => cpuMs(pid),
    reset: () => {
      peak = 0;
      read();
    },
    stop: () => clearInterval(timer),
  };
}

function cleanup() {
  started?.stop();
}

main()
  .then(() => {
    cleanup();
    process.exit(0);
  })
  .catch((err) => {
    console.error(err);
    cleanup();
    process.exit(1);
  });
