// Scale benchmark: list latency at 1k, 100k and 1M rows, SQLite and (with DATABASE_URL) PostgreSQL.
// Usage: npm run bench -- --scale [--sizes 1000,100000,1000000]
// Environment:
//   DATABASE_URL            postgres://… to measure PostgreSQL too (a fresh schema per size, dropped after)
//   BENCH_SCALE_SIZES       row counts (default 1000,100000,1000000); --sizes wins
//   BENCH_SCALE_REQUESTS    measured requests per endpoint and size (default 100, after 10 warm-up rounds)
//   BENCH_SCALE_DATABASES   which to measure (default sqlite, plus postgres when DATABASE_URL is set)
// Rows are generated inside the database (a recursive CTE on SQLite, generate_series on PostgreSQL),
// N each of users, posts, orders, rooms and messages; the list counters are then recounted and the
// tables ANALYZEd. One client sends the requests one after the other: the figure is the median
// latency of one request, and the last column is its 1M/1k ratio (docs/performance.md).
import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const require = createRequire(import.meta.url);
const ADMIN_EMAIL = 'scale-admin@example.com';
const ADMIN_PASSWORD = 'scale-password-123';
const BASE_EPOCH = 1577836800; // 2020-01-01T00:00:00Z

export async function runScale({ sizes } = {}) {
  const list = (sizes ?? process.env.BENCH_SCALE_SIZES ?? '1000,100000,1000000')
    .split(',')
    .map((s) => Number(s.trim()))
    .filter((n) => Number.isInteger(n) && n >= 100);
  const requests = Number(process.env.BENCH_SCALE_REQUESTS ?? 100);
  const { RECOUNT_SQL } = await import(join(ROOT, 'dist/database/counters.repository.js'));
  const dialects = (
    process.env.BENCH_SCALE_DATABASES ??
    ((process.env.DATABASE_URL ?? '').startsWith('postgres') ? 'sqlite,postgres' : 'sqlite')
  ).split(',');
  const workDir = mkdtempSync(join(tmpdir(), 'atrium-scale-'));
  try {
    for (const dialect of dialects) {
      const results = new Map(); // endpoint -> Map(size -> median ms)
      const exports = []; // per size: the orders export (measureExport)
      const dbs = [];
      const apps = [];
      try {
        for (const n of list) {
          const db = await openDatabase(dialect, workDir, n);
          dbs.push(db);
          await stopApp(await startApp(db.url)); // migrations + the admin
          const t0 = Date.now();
          await seed(db, n, RECOUNT_SQL);
          console.error(`[scale] ${dialect}: ${n} rows per table seeded in ${Date.now() - t0} ms`);
        }
        // one app per size, all running: each endpoint is measured in rounds that visit every
        // size in turn, so a busy moment of the machine hits all sizes alike
        for (const db of dbs) {
          const app = await startApp(db.url);
          apps.push(app);
          app.token = await signIn(app.base);
          app.signedInAt = Date.now();
        }
        for (const app of apps) {
          exports.push(await measureExport(app));
        }
        printExports(list, exports); // now: a long run's later failure keeps these figures
        const perSize = list.map((n) => endpoints(n));
        for (let e = 0; e < perSize[0].length; e++) {
          // access tokens expire (15 min by default) during a long run at 1M rows: sign in again
          for (const app of apps) {
            if (Date.now() - (app.signedInAt ?? 0) > 5 * 60_000) {
              app.token = await signIn(app.base);
              app.signedInAt = Date.now();
            }
          }
          const medians = await measureInterleaved(
            apps.map((app, i) => ({ app, endpoint: perSize[i][e] })),
            requests,
          );
          results.set(perSize[0][e].name, new Map(list.map((n, i) => [n, medians[i]])));
        }
      } finally {
        for (const app of apps) {
          await stopApp(app);
        }
        for (const db of dbs) {
          await db.drop();
        }
      }
      printTable(dialect, list, results);
    }
  } finally {
    rmSync(workDir, { recursive: true, force: true });
  }
}

// ---- the endpoints ---------------------------------------------------------------------------

// seeded order totals: 100 + (i * 7919) % 100000 cents, i.e. spread evenly over 100..100099
const MIN_SEEDED_TOTAL = 100;
const SEEDED_TOTAL_VALUES = 100_000;
const MAX_SEEDED_TOTAL = MIN_SEEDED_TOTAL + SEEDED_TOTAL_VALUES - 1;
/** How many total values hold about 100 of n seeded orders. */
const totalSpan = (n) => Math.max(1, Math.round((100 * SEEDED_TOTAL_VALUES) / n));

const pad = (i) => String(i).padStart(26, '0');
const iso = (i) => new Date((BASE_EPOCH + i) * 1000).toISOString();
const cursor = (key, value, id) =>
  Buffer.from(JSON.stringify([key, value, id])).toString('base64url');

function endpoints(n) {
  const busyUser = `usr_${pad(1)}`;
  const busyRoom = `rom_${pad(1)}`;
  const mid = Math.floor(n / 2);
  const userCursor = cursor('users:created_at', iso(mid), `usr_${pad(mid)}`);
  // room 1 holds the messages with even numbers: message 2k has seq k
  const msgCursor = cursor(
    'messages:created_at',
    Math.floor(mid / 2),
    `msg_${pad(2 * Math.floor(mid / 2))}`,
  );
  const gql = (query) => ({ method: 'POST', path: '/graphql', body: { query } });
  return [
    { name: 'GET /users?limit=20', path: '/api/v1/users?limit=20' },
    {
      name: 'GET /users?page=500&limit=20 (deepest page number)',
      path: '/api/v1/users?page=500&limit=20',
    },
    {
      name: 'GET /users?cursor=<middle>&limit=20 (deep page, Link next)',
      path: `/api/v1/users?cursor=${userCursor}&limit=20`,
    },
    {
      name: 'GET /users?sort=-created_at&limit=20',
      path: '/api/v1/users?sort=-created_at&limit=20',
    },
    { name: 'GET /users?sort=name&limit=20', path: '/api/v1/users?sort=name&limit=20' },
    { name: 'GET /users?role=GUEST&limit=20', path: '/api/v1/users?role=GUEST&limit=20' },
    { name: 'GET /posts?limit=20', path: '/api/v1/posts?limit=20' },
    {
      name: 'GET /posts?author_id=<busy>&sort=-created_at',
      path: `/api/v1/posts?author_id=${busyUser}&sort=-created_at&limit=20`,
    },
    {
      name: 'GET /users/<busy>/orders?status=paid',
      path: `/api/v1/users/${busyUser}/orders?status=paid&limit=20`,
    },
    { name: 'GET /rooms?sort=name&limit=20', path: '/api/v1/rooms?sort=name&limit=20' },
    {
      name: 'GET /rooms/<busy>/messages?cursor=<middle>',
      path: `/api/v1/rooms/${busyRoom}/messages?cursor=${msgCursor}&limit=20`,
    },
    {
      name: 'gql users(first: 20) { totalCount nodes }',
      ...gql('{ users(first: 20) { totalCount nodes { id name } } }'),
    },
    {
      name: 'gql users(first: 20) { nodes } (no totalCount)',
      ...gql('{ users(first: 20) { nodes { id name } } }'),
    },
    {
      name: 'gql users(role: GUEST, first: 20) { totalCount }',
      ...gql('{ users(role: GUEST, first: 20) { totalCount nodes { id } } }'),
    },
    {
      name: 'gql users(after: <middle>) { totalCount }',
      ...gql(`{ users(first: 20, after: "${userCursor}") { totalCount nodes { id } } }`),
    },
    {
      name: 'gql 20 users x posts(first: 5) { totalCount }',
      ...gql('{ users(first: 20) { nodes { id posts(first: 5) { totalCount nodes { id } } } } }'),
    },
    {
      name: 'gql rooms(first: 20) x messages(first: 5)',
      ...gql(
        '{ rooms(first: 20) { totalCount nodes { id messages(first: 5) { totalCount nodes { id } } } } }',
      ),
    },
    {
      name: 'gql user(<busy>) { orders(first: 20) { totalCount } }',
      ...gql(`{ user(id: "${busyUser}") { orders(first: 20) { totalCount nodes { id } } } }`),
    },
    // the orders list across users (docs/admin.md): each filter; the date and total filters match
    // about 100 orders at every size (the last 100 orders, the first 100, the 100 highest and
    // lowest totals: a fixed bound such as min_total_cents=100090 matches 0 orders at 1k and 100
    // at 1M, and would compare an empty page with a full one), then half of the orders (`<half>`),
    // whose exact total is a sum of range counters, not a count of the matches
    { name: 'GET /orders?limit=20', path: '/api/v1/orders?limit=20' },
    { name: 'GET /orders?status=paid', path: '/api/v1/orders?status=paid&limit=20' },
    {
      name: 'GET /orders?user_id=<busy>',
      path: `/api/v1/orders?user_id=${busyUser}&limit=20`,
    },
    {
      name: 'GET /orders?created_after=<last 100>',
      path: `/api/v1/orders?created_after=${iso(n - 100)}&limit=20`,
    },
    {
      name: 'GET /orders?created_before=<first 100>',
      path: `/api/v1/orders?created_before=${iso(100)}&sort=-created_at&limit=20`,
    },
    {
      name: 'GET /orders?min_total_cents=<top 100>',
      path: `/api/v1/orders?min_total_cents=${MAX_SEEDED_TOTAL + 1 - totalSpan(n)}&limit=20`,
    },
    {
      name: 'GET /orders?max_total_cents=<lowest 100>',
      path: `/api/v1/orders?max_total_cents=${MIN_SEEDED_TOTAL - 1 + totalSpan(n)}&limit=20`,
    },
    {
      // not selective: the page is a walk of the created_at index that stops after 21 rows; the
      // exact total of the n/2 matches comes from the range counters
      name: 'GET /orders?min_total_cents=<half> (n/2 match)',
      path: `/api/v1/orders?min_total_cents=${MIN_SEEDED_TOTAL + SEEDED_TOTAL_VALUES / 2}&limit=20`,
    },
    {
      name: 'GET /orders?created_after=<half> (n/2 match)',
      path: `/api/v1/orders?created_after=${iso(mid)}&limit=20`,
    },
    {
      name: 'GET /orders?status=paid&max_total_cents=<half> (n/10 match)',
      path: `/api/v1/orders?status=paid&max_total_cents=${MIN_SEEDED_TOTAL + SEEDED_TOTAL_VALUES / 2}&limit=20`,
    },
    {
      name: 'GET /orders?sort=-total_cents',
      path: '/api/v1/orders?sort=-total_cents&limit=20',
    },
    {
      name: 'GET /orders?status=paid&sort=-total_cents',
      path: '/api/v1/orders?status=paid&sort=-total_cents&limit=20',
    },
    {
      name: 'gql orders(filter: {status: PAID}, orderBy: TOTAL_CENTS DESC)',
      ...gql(
        '{ orders(filter: {status: PAID}, first: 20, orderBy: {field: TOTAL_CENTS, direction: DESC}) { totalCount nodes { id } } }',
      ),
    },
    // the user search: a name word ("0" starts one name at every size), an email prefix
    { name: 'GET /users?q=0 (name word)', path: '/api/v1/users?q=0&limit=20' },
    { name: 'GET /users?q=scale500@ (email prefix)', path: '/api/v1/users?q=scale500%40&limit=20' },
    {
      name: 'gql users(query: "0") { totalCount }',
      ...gql('{ users(query: "0", first: 20) { totalCount nodes { id } } }'),
    },
  ];
}

/**
 * The orders export (NDJSON) of every order, once per size: its duration and how far the app's
 * resident memory rose above what it was just before (VmRSS of /proc, sampled every 20 ms).
 */
async function measureExport(app) {
  const rss = () => {
    const status = readFileSync(`/proc/${app.child.pid}/status`, 'utf8');
    return Number(/VmRSS:\s+(\d+)/.exec(status)[1]) / 1024;
  };
  const before = rss();
  let peak = before;
  const timer = setInterval(() => {
    peak = Math.max(peak, rss());
  }, 20);
  const t0 = performance.now();
  const res = await fetch(`${app.base}/api/v1/orders/export`, {
    headers: { authorization: `Bearer ${app.token}`, accept: 'application/x-ndjson' },
  });
  if (res.status !== 200) {
    clearInterval(timer);
    throw new Error(`export: HTTP ${res.status} ${await res.text()}`);
  }
  let lines = 0;
  for await (const chunk of res.body) {
    for (const byte of chunk) {
      if (byte === 10) {
        lines++;
      }
    }
  }
  clearInterval(timer);
  peak = Math.max(peak, rss());
  return { ms: performance.now() - t0, lines, rssBefore: before, rssGrowth: peak - before };
}

/** Median latency per target; every round sends one request to each target in turn. */
async function measureInterleaved(targets, requests) {
  const times = targets.map(() => []);
  for (let round = 0; round < requests + 10; round++) {
    for (const [i, { app, endpoint }] of targets.entries()) {
      const t0 = performance.now();
      await send(app.base, app.token, endpoint);
      if (round >= 10) {
        times[i].push(performance.now() - t0); // the first 10 rounds warm up
      }
    }
  }
  return times.map((list) => {
    list.sort((a, b) => a - b);
    return list[Math.floor(list.length / 2)];
  });
}

async function send(base, token, endpoint) {
  const res = await fetch(`${base}${endpoint.path}`, {
    method: endpoint.method ?? 'GET',
    headers: {
      authorization: `Bearer ${token}`,
      accept: 'application/json',
      ...(endpoint.body ? { 'content-type': 'application/json' } : {}),
    },
    body: endpoint.body ? JSON.stringify(endpoint.body) : undefined,
  });
  const text = await res.text();
  if (res.status !== 200 || text.includes('"errors"')) {
    throw new Error(`${endpoint.name}: HTTP ${res.status} ${text.slice(0, 300)}`);
  }
}

function printExports(sizes, exports) {
  const label = (n) => (n >= 1e6 ? `${n / 1e6}M` : n >= 1e3 ? `${n / 1e3}k` : String(n));
  console.log('\nGET /orders/export (NDJSON, every order): one request per size\n');
  console.log('| orders | lines | seconds | rows/s | RSS before (MB) | RSS growth (MB) |');
  console.log('|---|---|---|---|---|---|');
  sizes.forEach((n, i) => {
    const e = exports[i];
    if (!e) {
      return;
    }
    console.log(
      `| ${label(n)} | ${e.lines} | ${(e.ms / 1000).toFixed(2)} | ${Math.round(e.lines / (e.ms / 1000))} | ${e.rssBefore.toFixed(0)} | ${e.rssGrowth.toFixed(1)} |`,
    );
  });
}

function printTable(dialect, sizes, results) {
  const label = (n) => (n >= 1e6 ? `${n / 1e6}M` : n >= 1e3 ? `${n / 1e3}k` : String(n));
  const first = sizes[0];
  const last = sizes[sizes.length - 1];
  console.log(
    `\n### ${dialect === 'sqlite' ? 'SQLite' : 'PostgreSQL'}: median latency of one request (ms)\n`,
  );
  console.log(`| request | ${sizes.map(label).join(' | ')} | ${label(last)}/${label(first)} |`);
  console.log(`|---|${sizes.map(() => '---').join('|')}|---|`);
  for (const [name, bySize] of results) {
    const cells = sizes.map((n) => bySize.get(n)?.toFixed(2) ?? '—');
    const ratio = bySize.get(last) / bySize.get(first);
    console.log(`| ${name} | ${cells.join(' | ')} | ${ratio.toFixed(2)}x |`);
  }
}

// ---- the databases ---------------------------------------------------------------------------

async function openDatabase(dialect, workDir, n) {
  if (dialect === 'sqlite') {
    const file = join(workDir, `scale-${n}.sqlite`);
    const Database = require('better-sqlite3');
    let conn;
    const open = () => {
      if (!conn) {
        conn = new Database(file);
        // a bulk load: a large page cache keeps the index builds in memory
        conn.pragma('synchronous = OFF');
        conn.pragma('cache_size = -1000000');
        conn.pragma('temp_store = MEMORY');
      }
      return conn;
    };
    return {
      dialect,
      url: `sqlite:${file}`,
      exec: async (sql) => {
        open().exec(sql);
      },
      rows: async (sql) => open().prepare(sql).all(),
      drop: async () => {
        conn?.close();
        for (const suffix of ['', '-wal', '-shm']) {
          rmSync(`${file}${suffix}`, { force: true });
        }
      },
    };
  }
  const pg = require('pg');
  const schema = `atrium_scale_${n}_${process.pid}`;
  const url = new URL(process.env.DATABASE_URL);
  url.searchParams.delete('schema');
  const client = new pg.Client({ connectionString: url.toString() });
  await client.connect();
  await client.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
  await client.query(`CREATE SCHEMA ${schema}`);
  await client.query(`SET search_path TO ${schema}`);
  const appUrl = new URL(url);
  appUrl.searchParams.set('schema', schema);
  return {
    dialect,
    url: appUrl.toString(),
    exec: (sql) => client.query(sql),
    rows: async (sql) => (await client.query(sql)).rows,
    drop: async () => {
      await client.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
      await client.end();
    },
  };
}

/** N rows in each table, generated by the database itself; then counters and statistics. */
async function seed(db, n, recountSql) {
  const sqlite = db.dialect === 'sqlite';
  const series = (insert, select) =>
    sqlite
      ? `WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < ${n}) ${insert} ${select} FROM s`
      : `${insert} ${select} FROM generate_series(1, ${n}) AS s(i)`;
  const id = (prefix, expr) =>
    sqlite
      ? `'${prefix}_' || printf('%026d', ${expr})`
      : `'${prefix}_' || lpad((${expr})::text, 26, '0')`;
  const ts = (expr) =>
    sqlite
      ? `strftime('%Y-%m-%dT%H:%M:%fZ', ${BASE_EPOCH} + (${expr}), 'unixepoch')`
      : `to_char(timestamp '2020-01-01 00:00:00' + (${expr}) * interval '1 second', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;
  const big = sqlite ? 'i' : 'i::bigint';
  const statements = [
    series(
      'INSERT INTO users (id, name, email, email_normalized, role, age, password_hash, created_at, updated_at, deleted_at)',
      `SELECT ${id('usr', 'i')}, 'User ' || ((${big} * 7919) % ${n}), 'scale' || i || '@bench.test',
              'scale' || i || '@bench.test',
              CASE WHEN i % 20 = 0 THEN 'GUEST' WHEN i % 50 = 1 THEN 'ADMIN' ELSE 'USER' END, NULL, NULL,
              ${ts('i')}, ${ts('i')}, CASE WHEN i % 100 = 99 THEN ${ts('i')} END`,
    ),
    series(
      'INSERT INTO posts (id, author_id, title, body, created_at, updated_at, deleted_at)',
      `SELECT ${id('pst', 'i')}, ${id('usr', `CASE WHEN i % 10 = 0 THEN 1 ELSE ((i - 1) % 1000) + 1 END`)},
              'Post ' || ((${big} * 104729) % ${n}), 'body', ${ts('i')}, ${ts('i')}, NULL`,
    ),
    series(
      'INSERT INTO orders (id, user_id, status, items, total_cents, currency, created_at, updated_at)',
      `SELECT ${id('ord', 'i')}, ${id('usr', `CASE WHEN i % 4 = 0 THEN 1 ELSE ((i - 1) % 1000) + 1 END`)},
              CASE i % 5 WHEN 0 THEN 'pending' WHEN 1 THEN 'paid' WHEN 2 THEN 'shipped'
                WHEN 3 THEN 'delivered' ELSE 'cancelled' END,
              '[{"sku":"S","quantity":1,"unit_price_cents":100}]', 100 + (${big} * 7919) % 100000,
              'EUR', ${ts('i')}, ${ts('i')}`,
    ),
    series(
      'INSERT INTO rooms (id, name, created_by, created_at, last_seq)',
      `SELECT ${id('rom', 'i')}, 'room ' || ((${big} * 7919) % ${n}) || ' ' || i, ${id('usr', '1')}, ${ts('i')}, 0`,
    ),
    // even messages go to room 1 (seq i/2); odd ones round-robin over rooms 2..1000
    series(
      'INSERT INTO messages (id, room_id, author_id, content, created_at, seq)',
      `SELECT ${id('msg', 'i')},
              ${id('rom', `CASE WHEN i % 2 = 0 THEN 1 ELSE 2 + ((i - 1) / 2) % 999 END`)},
              ${id('usr', '((i - 1) % 1000) + 1')}, 'message ' || i, ${ts('i')},
              CASE WHEN i % 2 = 0 THEN i / 2 ELSE ((i - 1) / 2) / 999 + 1 END`,
    ),
  ];
  // after the indexes are back: these read by them
  const after = [
    `UPDATE rooms SET last_seq = (SELECT MAX(seq) FROM messages m WHERE m.room_id = rooms.id)
      WHERE id IN (SELECT DISTINCT room_id FROM messages)`,
    'DELETE FROM list_counts',
    ...recountSql.map(
      (sql) => `INSERT INTO list_counts (scope, n) SELECT scope, n FROM (${sql}) counted`,
    ),
  ];
  // building an index from sorted rows is far cheaper than a million random index inserts: drop the
  // tables' secondary indexes, load, and create them again from their own definitions
  const tables = "'users', 'posts', 'orders', 'rooms', 'messages'";
  const indexes = await db.rows(
    sqlite
      ? `SELECT name, sql AS def FROM sqlite_master
          WHERE type = 'index' AND sql IS NOT NULL AND tbl_name IN (${tables})`
      : `SELECT indexname AS name, indexdef AS def FROM pg_indexes
          WHERE schemaname = current_schema() AND tablename IN (${tables})
            AND indexname NOT IN (SELECT conname FROM pg_constraint)`,
  );
  await db.exec('BEGIN');
  for (const index of indexes) {
    await db.exec(`DROP INDEX ${sqlite ? index.name : `"${index.name}"`}`);
  }
  for (const sql of statements) {
    await db.exec(sql);
  }
  for (const index of indexes) {
    await db.exec(index.def);
  }
  for (const sql of after) {
    await db.exec(sql);
  }
  await db.exec('COMMIT');
  // PostgreSQL: VACUUM too, as autovacuum would after such a load: it sets the visibility map, so
  // the plans are those of a settled table (index-only scans possible), not of a fresh bulk load
  await db.exec(sqlite ? 'ANALYZE' : `VACUUM (ANALYZE) ${tables.replaceAll("'", '')}`);
  if (sqlite) {
    await db.exec('PRAGMA wal_checkpoint(TRUNCATE)');
  }
}

// ---- the app -----------------------------------------------------------------------------------

async function startApp(databaseUrl) {
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const child = spawn(process.execPath, [join(ROOT, 'dist/main.js')], {
    cwd: ROOT,
    env: {
      ...process.env,
      REDIS_URL: '',
      NODE_ENV: 'production',
      PORT: String(port),
      HOST: '127.0.0.1',
      PUBLIC_URL: base,
      DATABASE_URL: databaseUrl,
      LOG_LEVEL: 'warn',
      ADMIN_EMAIL,
      ADMIN_PASSWORD,
      RATE_LIMIT: '100000000',
      GRAPHQL_COST_BUDGET: '1000000000',
    },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  const app = { child, base, stderr: '' };
  child.stderr.on('data', (d) => {
    app.stderr = (app.stderr + d).slice(-4000);
  });
  const deadline = Date.now() + 120_000;
  for (;;) {
    if (child.exitCode !== null) {
      throw new Error(`app exited (${child.exitCode}):\n${app.stderr}`);
    }
    try {
      const res = await fetch(`${base}/health/ready`);
      await res.arrayBuffer();
      if (res.status === 200) {
        return app;
      }
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) {
      await stopApp(app);
      throw new Error(`app not ready:\n${app.stderr}`);
    }
    await sleep(200);
  }
}

async function stopApp(app) {
  if (app.child.exitCode === null) {
    const exited = new Promise((r) => app.child.once('exit', r));
    app.child.kill('SIGTERM');
    await exited;
  }
}

async function signIn(base) {
  const res = await fetch(`${base}/api/v1/auth/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ email: ADMIN_EMAIL, password: ADMIN_PASSWORD }),
  });
  const body = await res.json();
  if (!body.access_token) {
    throw new Error(`sign-in failed: ${JSON.stringify(body)}`);
  }
  return body.access_token;
}

function freePort() {
  return new Promise((resolvePort, reject) => {
    const server = createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolvePort(port));
    });
  });
}
