// Abusive clients against the built app while a well-behaved client measures its latency
// (docs/limits.md, "Abuse"). Starts `node dist/main.js` (SQLite file in a temporary directory,
// NODE_ENV=production, the default HTTP timeouts and WebSocket caps, request and cost budgets that the
// load cannot exhaust, so every abusive request is answered by the limit it tests rather than 429),
// then runs one phase per abuse, BENCH_ABUSE_SECONDS (8) each:
//   baseline           nothing but the good client
//   slow clients       BENCH_ABUSE_SLOW (500) connections trickling request headers a byte every
//                      100 ms, each replaced when the server cuts it (408 at HTTP_HEADERS_TIMEOUT_MS)
//   oversized headers  4 loops sending 20 KiB of headers (431)
//   ws flood           one socket sending 10,000 `subscribe` messages at once, then the next socket
//   many sockets       4 loops opening sockets with one identity (10 acknowledged, the rest 4429)
//   batch arrays       4 loops POSTing arrays of 1000 operations to /graphql
//   alias floods       4 loops POSTing 2000 aliases of `me { id }`
//   all at once        every abuse above together
// and then, with BENCH_ABUSE_SEARCH_MB (40) MB of posts written straight into the SQLite file:
//   search             the costliest `search` request the cost limit allows (10 aliases, one-letter
//                      prefixes and words no post holds, first: 100, 1000 points): once every 6 s
//                      (what GRAPHQL_COST_BUDGET lets one identity send), then 4 loops flat out
//   introspection      one anonymous address at the pace the default limits allow it (300 requests
//                      and 10 000 points a minute): the 10 KB document of 20 aliased `__schema`
//                      copies (refused by cost) and, within its points, 3 copies with fresh alias
//                      names (never cached), over HTTP, then over an anonymous WebSocket; then 4
//                      anonymous loops of the standard introspection query flat out (cached)
// The good client (another identity) sends, in turn, `GET /api/v1/users/:id` and the GraphQL query
// `{ me { id name } }`, one at a time, 10 ms apart; it fails the run on any answer but 200. Prints per
// phase the abusive requests sent and how they were answered, the good client's p50/p99/max for each
// request and the app's CPU use.
//
//   npm run bench -- --abuse                 (builds if needed)
//   npm run build && node bench/abuse.mjs
//   BENCH_ABUSE_PHASES=flood node bench/abuse.mjs     # only the phases whose name has "flood"
//   BENCH_ABUSE_PHASES=search,introspection node bench/abuse.mjs   # several, comma-separated
import { connect } from 'node:net';
import { dirname, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import { getIntrospectionQuery } from 'graphql';
import WebSocket from 'ws';
import { cpuMs, post, quantiles, startBuiltApp, timedMeQuery } from './plumbing.mjs';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const SECONDS = Number(process.env.BENCH_ABUSE_SECONDS ?? 8);
const SLOW = Number(process.env.BENCH_ABUSE_SLOW ?? 500);
const SEARCH_MB = Number(process.env.BENCH_ABUSE_SEARCH_MB ?? 40);
const LOOPS = 4;
const ADMIN_EMAIL = 'bench-admin@example.com';
const ADMIN_PASSWORD = 'bench-password-123';

let started;

export async function runAbuse() {
  try {
    await main();
  } finally {
    cleanup();
  }
}

async function main() {
  started = await startBuiltApp({
    root: ROOT,
    name: 'abuse',
    admin: { email: ADMIN_EMAIL, password: ADMIN_PASSWORD },
    env: { GRAPHQL_COST_BUDGET: '1000000000' },
  });
  const { url: app, proc } = started;

  const admin = {
    authorization: `Bearer ${(await post(`${app}/api/v1/auth/token`, { email: ADMIN_EMAIL, password: ADMIN_PASSWORD })).json.access_token}`,
  };
  let users = 0;
  const identity = async () => {
    const who = {
      name: `Bench ${++users}`,
      email: `bench-${users}@example.com`,
      password: 'bench-user-password-1',
    };
    const id = (await post(`${app}/api/v1/users`, who, admin)).json.data.id;
    const token = (
      await post(`${app}/api/v1/auth/token`, { email: who.email, password: who.password })
    ).json.access_token;
    return { id, token };
  };
  const good = await identity();
  const abusers = {
    flood: await identity(),
    greedy: await identity(),
    batch: await identity(),
  };

  const ABUSE = {
    'slow clients': () => slowClients(app),
    'oversized headers': () => loops(() => oversized(app)),
    'ws flood: 10,000 messages per socket': () => wsFlood(app, abusers.flood.token),
    'many sockets, one identity': () => {
      const running = loops(() => greedySocket(app, abusers.greedy.token));
      return {
        stop: async () => {
          const report = await running.stop();
          kept.splice(0).forEach((ws) => ws.close());
          return report;
        },
      };
    },
    'graphql batch arrays (1000 ops)': () => loops(() => graphql(app, abusers.batch.token, BATCH)),
    'graphql alias floods (2000 aliases)': () =>
      loops(() => graphql(app, abusers.batch.token, { query: ALIASES })),
  };
  const anonymousPaced = (ws) => () => pacedIntrospection(app, ws);
  const phases = [
    ['baseline (no abuse)', () => idle()],
    ...Object.entries(ABUSE),
    ['all at once', () => together(Object.values(ABUSE).map((start) => start()))],
    [
      `search x10 (${SEARCH_MB} MB of posts), paced`,
      () => paced(6000, () => graphql(app, abusers.batch.token, { query: MAX_SEARCH })),
    ],
    [
      `search x10 (${SEARCH_MB} MB of posts), flat out`,
      () => loops(() => graphql(app, abusers.batch.token, { query: MAX_SEARCH })),
    ],
    ['introspection anon HTTP, paced', anonymousPaced(false)],
    ['introspection anon WS, paced', anonymousPaced(true)],
    [
      'introspection anon HTTP, flat out',
      () => loops(() => graphql(app, undefined, { query: STANDARD_INTROSPECTION })),
    ],
  ];
  let seeded = false;
  const only = process.env.BENCH_ABUSE_PHASES;
  const rows = [];
  for (const [name, start] of phases.filter(
    ([n]) => !only || only.split(',').some((o) => n.includes(o)) || n.startsWith('baseline'),
  )) {
    if (name.startsWith('search') && !seeded) {
      seeded = true;
      console.error(`[abuse] writing ${SEARCH_MB} MB of posts...`);
      await seedPosts(started.dbPath, abusers.batch.id, SEARCH_MB);
    }
    const cpu0 = cpuMs(proc.pid);
    const abuse = start();
    const latencies = await goodClient(app, good);
    const { sent, answers } = await abuse.stop();
    rows.push({
      name,
      sent,
      answers,
      ...latencies,
      cpu: (cpuMs(proc.pid) - cpu0) / (SECONDS * 1000),
    });
    console.error(`[abuse] ${name}: done`);
  }

  console.log(`\nabuse bench: ${SECONDS} s per phase, app ${ROOT}\n`);
  console.log(
    [
      'phase'.padEnd(38),
      'abusive'.padStart(8),
      'answers'.padEnd(46),
      'REST p50'.padStart(9),
      'p99'.padStart(7),
      'max'.padStart(7),
      'GQL p50'.padStart(8),
      'p99'.padStart(7),
      'max'.padStart(7),
      'good n'.padStart(7),
      'app CPU'.padStart(8),
      'p50 x idle'.padStart(11),
    ].join(' '),
  );
  const idleRow = rows[0];
  const ms = (v) => `${v.toFixed(1)}`;
  for (const r of rows) {
    console.log(
      [
        r.name.slice(0, 38).padEnd(38),
        String(r.sent).padStart(8),
        r.answers.slice(0, 46).padEnd(46),
        ms(r.rest.p50).padStart(9),
        ms(r.rest.p99).padStart(7),
        ms(r.rest.max).padStart(7),
        ms(r.gql.p50).padStart(8),
        ms(r.gql.p99).padStart(7),
        ms(r.gql.max).padStart(7),
        String(r.rest.n + r.gql.n).padStart(7),
        `${Math.round(r.cpu * 100)}%`.padStart(8),
        `${(r.rest.p50 / idleRow.rest.p50).toFixed(1)}/${(r.gql.p50 / idleRow.gql.p50).toFixed(1)}`.padStart(
          11,
        ),
      ].join(' '),
    );
  }
  console.log(
    '\nlatencies in ms; p50 x idle: REST/GraphQL median over the baseline median; the good client got only 200s in every phase',
  );
}

// ---- the well-behaved client ------------------------------------------------------------------------

async function goodClient(app, good) {
  const rest = [];
  const gql = [];
  const headers = { authorization: `Bearer ${good.token}` };
  const end = Date.now() + SECONDS * 1000;
  while (Date.now() < end) {
    const t0 = performance.now();
    const a = await fetch(`${app}/api/v1/users/${good.id}`, { headers });
    await a.arrayBuffer();
    rest.push(performance.now() - t0);
    const b = await timedMeQuery(app, headers);
    gql.push(b.ms);
    if (a.status !== 200 || b.status !== 200 || b.body.errors) {
      throw new Error(`the good client got ${a.status} / ${b.status} ${JSON.stringify(b.body)}`);
    }
    await sleep(10);
  }
  return { rest: quantiles(rest), gql: quantiles(gql) };
}

// ---- abuse ------------------------------------------------------------------------------------------

/** A running abuse: `stop()` ends it and reports what was sent and how it was answered. */
function tally() {
  const answers = new Map();
  let sent = 0;
  return {
    count(outcome) {
      sent++;
      answers.set(outcome, (answers.get(outcome) ?? 0) + 1);
    },
    report() {
      return {
        sent,
        answers: [...answers].map(([k, v]) => `${k}x${v}`).join(' ') || '-',
      };
    },
  };
}

function idle() {
  return { stop: async () => ({ sent: 0, answers: '-' }) };
}

function together(running) {
  return {
    stop: async () => {
      const reports = await Promise.all(running.map((r) => r.stop()));
      return {
        sent: reports.reduce((n, r) => n + r.sent, 0),
        answers: `${reports.length} abuses`,
      };
    },
  };
}

/** LOOPS concurrent loops of one abusive request; each returns its outcome label. */
function loops(once) {
  const t = tally();
  let running = true;
  const all = Array.from({ length: LOOPS }, async () => {
    while (running) {
      t.count(await once().catch((err) => `fail:${err.cause?.code ?? err.code ?? err.message}`));
    }
  });
  return {
    stop: async () => {
      running = false;
      await Promise.all(all);
      return t.report();
    },
  };
}

/** SLOW connections trickling headers; a cut one is replaced, so SLOW stay open the whole phase. */
function slowClients(app) {
  const t = tally();
  const { hostname, port } = new URL(app);
  const head = `GET /api/v1/users HTTP/1.1\r\nHost: bench\r\nX-Pad: ${'a'.repeat(4000)}\r\n\r\n`;
  const open = new Set();
  let running = true;
  const start = () => {
    const socket = connect(Number(port), hostname);
    let received = '';
    let sent = 0;
    socket.setEncoding('latin1');
    socket.on('data', (d) => (received += d));
    socket.on('error', () => undefined);
    const timer = setInterval(() => {
      if (sent < head.length && socket.writable) {
        socket.write(head[sent++]);
      }
    }, 100);
    open.add(socket);
    socket.on('close', () => {
      clearInterval(timer);
      open.delete(socket);
      if (running) {
        t.count(received.slice(9, 12) || 'closed');
        start();
      }
    });
  };
  for (let i = 0; i < SLOW; i++) {
    start();
  }
  return {
    stop: async () => {
      running = false;
      const report = t.report();
      report.answers = `${report.answers} (open ${open.size})`;
      for (const s of open) {
        s.destroy();
      }
      return report;
    },
  };
}

function oversized(app) {
  const { hostname, port } = new URL(app);
  const big = `GET /api/v1/users HTTP/1.1\r\nHost: bench\r\nX-Big: ${'b'.repeat(20 * 1024)}\r\n\r\n`;
  return new Promise((resolveOutcome) => {
    const socket = connect(Number(port), hostname, () => socket.write(big));
    let received = '';
    socket.setEncoding('latin1');
    socket.on('data', (d) => (received += d));
    socket.on('error', () => undefined);
    socket.on('close', () => resolveOutcome(received.slice(9, 12) || 'closed'));
  });
}

function socketTo(app, token) {
  const ws = new WebSocket(`${app.replace(/^http/, 'ws')}/graphql`, 'graphql-transport-ws');
  const state = { ws, acked: false, closeCode: undefined, onMessage: () => undefined };
  const ready = new Promise((resolveReady) => {
    ws.on('open', () =>
      ws.send(
        JSON.stringify({ type: 'connection_init', payload: { Authorization: `Bearer ${token}` } }),
      ),
    );
    ws.on('message', (data) => {
      const msg = JSON.parse(data.toString('utf8'));
      if (msg.type === 'connection_ack') {
        state.acked = true;
        resolveReady(state);
      } else {
        state.onMessage(msg);
      }
    });
    ws.on('close', (code) => {
      state.closeCode = code;
      resolveReady(state);
    });
    ws.on('error', () => undefined);
  });
  return ready;
}

/** One socket at a time sends 10,000 operations at once; the next starts when all are answered. */
function wsFlood(app, token) {
  const t = tally();
  let running = true;
  let current;
  const loop = (async () => {
    while (running) {
      const s = await socketTo(app, token);
      current = s;
      if (!s.acked) {
        t.count(`closed ${s.closeCode}`);
        continue;
      }
      let answered = 0;
      const done = new Promise((resolveDone) => {
        s.onMessage = (msg) => {
          if (msg.type === 'complete' || msg.type === 'error') {
            t.count(msg.type === 'error' ? msg.payload?.[0]?.extensions?.code : 'complete');
            if (++answered === 10_000) {
              resolveDone();
            }
          }
        };
        s.ws.on('close', resolveDone);
      });
      for (let i = 0; i < 10_000; i++) {
        s.ws.send(
          JSON.stringify({
            id: String(i),
            type: 'subscribe',
            payload: { query: '{ __typename }' },
          }),
        );
      }
      await done;
      s.ws.close();
    }
  })();
  return {
    stop: async () => {
      running = false;
      current?.ws.close();
      await loop;
      return t.report();
    },
  };
}

const kept = [];
async function greedySocket(app, token) {
  const s = await socketTo(app, token);
  if (s.acked) {
    kept.push(s.ws); // hold the slot: the next ones are over the cap
    if (kept.length > 50) {
      kept.shift().close();
    }
    return 'ack';
  }
  return `closed ${s.closeCode}`;
}

const BATCH = Array.from({ length: 1000 }, () => ({ query: '{ me { id name } }' }));
const ALIASES = `{ ${Array.from({ length: 2000 }, (_, i) => `a${i}: me { id }`).join(' ')} }`;

async function graphql(app, token, body) {
  const res = await fetch(`${app}/graphql`, {
    method: 'POST',
    headers: {
      ...(token ? { authorization: `Bearer ${token}` } : {}),
      'content-type': 'application/json',
    },
    body: JSON.stringify(body),
  });
  const json = await res.json().catch(() => undefined);
  const first = Array.isArray(json) ? json[0] : json;
  return `${res.status}:${first?.errors?.[0]?.extensions?.code ?? 'data'}`;
}

// ---- search and introspection ----------------------------------------------------------------------

/** 10 searches of cost 100: every other one a one-letter prefix, the others words no post holds. */
const MAX_SEARCH = `{ ${Array.from(
  { length: 10 },
  (_, i) =>
    `s${i}: search(term: "${i % 2 ? `zx${i}qv` : 'abcdefghij'[i]}", first: 100) { __typename }`,
).join(' ')} }`;

const STANDARD_INTROSPECTION = getIntrospectionQuery({ descriptions: true });
const FULL_TYPE = `types { name kind description fields(includeDeprecated: true) { name description
  args { name description type { kind name ofType { kind name ofType { kind name ofType { kind name } } } }
  defaultValue } type { kind name ofType { kind name ofType { kind name ofType { kind name ofType { kind
  name } } } } } isDeprecated deprecationReason } inputFields { name type { kind name ofType { kind name
  } } } interfaces { name } enumValues(includeDeprecated: true) { name description } possibleTypes { name } }`;
let fresh = 0;
/** `n` copies of the schema's types under alias names not sent before (no cache can answer). */
const aliasedSchema = (n) =>
  `{ ${Array.from({ length: n }, () => `c${++fresh}: __schema { ${FULL_TYPE} }`).join(' ')} }`;

/** `once` every `ms` milliseconds (measured from one start to the next). */
function paced(ms, once) {
  const t = tally();
  let running = true;
  let wake;
  const loop = (async () => {
    while (running) {
      const t0 = performance.now();
      t.count(await once().catch((err) => `fail:${err.message}`));
      await new Promise((r) => {
        wake = r;
        setTimeout(r, Math.max(0, ms - (performance.now() - t0)));
      });
    }
  })();
  return {
    stop: async () => {
      running = false;
      wake?.();
      await loop;
      return t.report();
    },
  };
}

/**
 * One anonymous address sending what the default limits let it send (RATE_LIMIT 300 and
 * GRAPHQL_COST_BUDGET 10 000 per minute): the 20-copy document 5 times a second (refused by cost,
 * so only its request counts), and every 6 s (1 000 points) a 3-copy document that is new each time.
 * Over HTTP, or one anonymous graphql-ws socket.
 */
function pacedIntrospection(app, overSocket) {
  const t = tally();
  let running = true;
  const socket = overSocket ? anonymousSocket(app) : undefined;
  const send = async (query) => {
    if (!socket) {
      return graphql(app, undefined, { query });
    }
    return (await socket).run(query);
  };
  const loop = (async () => {
    let sent = 0;
    while (running) {
      const t0 = performance.now();
      const query = sent % 30 === 0 ? aliasedSchema(3) : aliasedSchema(20);
      sent++;
      t.count(await send(query).catch((err) => `fail:${err.message}`));
      await sleep(Math.max(0, 200 - (performance.now() - t0)));
    }
  })();
  return {
    stop: async () => {
      running = false;
      await loop;
      (await socket)?.ws.close();
      return t.report();
    },
  };
}

/** An anonymous graphql-ws socket that runs one operation at a time: `run(query)` -> outcome label. */
async function anonymousSocket(app) {
  const ws = new WebSocket(`${app.replace(/^http/, 'ws')}/graphql`, 'graphql-transport-ws');
  let pending;
  let next = 0;
  await new Promise((resolveAck, reject) => {
    ws.on('open', () => ws.send(JSON.stringify({ type: 'connection_init', payload: {} })));
    ws.on('message', (data) => {
      const msg = JSON.parse(data.toString('utf8'));
      if (msg.type === 'connection_ack') {
        resolveAck();
      } else if (msg.type === 'next' || msg.type === 'error') {
        const errors = msg.type === 'error' ? msg.payload : msg.payload.errors;
        pending?.(`ws:${errors?.[0]?.extensions?.code ?? 'data'}`);
      }
    });
    ws.on('close', (code) => reject(new Error(`closed ${code}`)));
    ws.on('error', () => undefined);
  });
  return {
    ws,
    run: (query) =>
      new Promise((resolveRun) => {
        pending = resolveRun;
        ws.send(JSON.stringify({ id: String(++next), type: 'subscribe', payload: { query } }));
      }),
  };
}

/** Words made up from a fixed seed, for post text (the same vocabulary as test/search.e2e-spec.ts). */
function vocabulary(size) {
  const letters = 'abcdefghijklmnopqrstuvwxyz';
  return Array.from({ length: size }, (_, i) => {
    let w = '';
    for (
      let x = i * 7919 + 17, len = 3 + (i % 8);
      w.length < len;
      x = Math.floor(x / 26) + i * 31
    ) {
      w += letters[x % 26];
    }
    return w;
  });
}

/** `mb` MB of 2 KB posts by `authorId`, inserted into the app's SQLite file (its triggers index them). */
async function seedPosts(dbPath, authorId, mb) {
  const { newId } = await import(resolve(ROOT, 'dist/common/ids.js'));
  const words = vocabulary(5000);
  let seed = 1;
  const text = (bytes) => {
    const out = [];
    for (let n = 0; n < bytes; ) {
      seed = (seed * 1103515245 + 12345) % 2147483648;
      const w = words[seed % words.length];
      out.push(w);
      n += w.length + 1;
    }
    return out.join(' ');
  };
  const db = new Database(dbPath);
  db.pragma('busy_timeout = 10000');
  const insert = db.prepare(
    `INSERT INTO posts (id, author_id, title, body, created_at, updated_at, deleted_at)
     VALUES (?, ?, ?, ?, ?, ?, NULL)`,
  );
  const base = Date.parse('2021-01-01T00:00:00.000Z');
  const count = Math.ceil((mb * 1024 * 1024) / 2000);
  db.transaction(() => {
    for (let i = 0; i < count; i++) {
      const ts = new Date(base + i * 1000).toISOString();
      insert.run(newId('post'), authorId, text(60), text(2000), ts, ts);
    }
  })();
  db.close();
}

// ---- plumbing ---------------------------------------------------------------------------------------

function cleanup() {
  for (const ws of kept.splice(0)) {
    ws.terminate();
  }
  started?.stop();
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  runAbuse().then(
    () => process.exit(0),
    (err) => {
      console.error(err);
      process.exit(1);
    },
  );
}
