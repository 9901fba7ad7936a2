// Webhook delivery under load (docs/performance.md "Webhooks"): the built app on SQLite with the
// in-process engine (or, with DATABASE_URL=postgres://… and REDIS_URL, on a fresh schema of that
// PostgreSQL database with the BullMQ engine on that Redis), a receiver in this process with 10
// endpoints (one answers 500 half the time), and BENCH_WEBHOOK_EVENTS (10,000) posts created through
// the API, each one event to every endpoint. Reports delivered deliveries/s, commit-to-delivery
// latency of the healthy endpoints, and the API's own GET latency while the events are written and
// delivered, and while the engine delivers what is left, as ratios to the idle latency measured first.
// Usage: npm run bench -- --webhooks
//        DATABASE_URL=postgres://… REDIS_URL=redis://… npm run bench -- --webhooks
// Environment: BENCH_WEBHOOK_EVENTS (10000), BENCH_WEBHOOK_ENDPOINTS (10; 0 = the same writes with
// nothing to deliver: the baseline of the latency while writing), BENCH_WEBHOOK_WRITERS (8)
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import { dirname, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { cpuMs, post, quantiles, startBuiltApp } from './plumbing.mjs';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const EVENTS = Number(process.env.BENCH_WEBHOOK_EVENTS ?? 10_000);
const ENDPOINTS = Number(process.env.BENCH_WEBHOOK_ENDPOINTS ?? 10);
const WRITERS = Number(process.env.BENCH_WEBHOOK_WRITERS ?? 8);
const ADMIN = { email: 'bench-admin@example.com', password: 'bench-password-123' };
const POSTGRES_URL = process.env.DATABASE_URL?.startsWith('postgres')
  ? process.env.DATABASE_URL
  : undefined;
const REDIS_URL = process.env.REDIS_URL || undefined;

/** PostgreSQL: the app's DATABASE_URL on a schema of its own, and how to drop it afterwards. */
function postgresSchema() {
  if (!POSTGRES_URL) {
    return { env: {}, drop: async () => {} };
  }
  const schema = `atrium_bench_wh_${Date.now().toString(36)}_${randomBytes(3).toString('hex')}`;
  const url = new URL(POSTGRES_URL);
  url.searchParams.set('schema', schema);
  return {
    env: { DATABASE_URL: url.toString() },
    drop: async () => {
      const { default: pg } = await import('pg');
      const client = new pg.Client({ connectionString: POSTGRES_URL });
      await client.connect();
      try {
        await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
      } finally {
        await client.end();
      }
    },
  };
}

export async function runWebhooks() {
  // the receiver: path /h0 … /h9; /h0 fails half of its requests
  const latencies = [];
  const seen = new Set();
  let delivered = 0;
  let failedAnswers = 0;
  let lastDelivery = 0;
  const receiver = createServer((req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      const failing = req.url === '/h0';
      if (failing && Math.random() < 0.5) {
        failedAnswers += 1;
        res.writeHead(500).end();
        return;
      }
      const now = Date.now();
      const key = `${req.url} ${req.headers['webhook-id']}`;
      if (!seen.has(key)) {
        seen.add(key);
        delivered += 1;
        lastDelivery = now;
        if (!failing) {
          const body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
          latencies.push(now - Date.parse(body.created_at));
        }
      }
      res.writeHead(204).end();
    });
  });
  await new Promise((r) => receiver.listen(0, '127.0.0.1', r));
  const port = receiver.address().port;

  const database = postgresSchema();
  const redisPrefix = `atrium-bench-wh-${randomBytes(3).toString('hex')}:`;
  const app = await startBuiltApp({
    root: ROOT,
    name: 'webhooks',
    admin: ADMIN,
    env: {
      ...database.env,
      ...(REDIS_URL ? { REDIS_URL, REDIS_PREFIX: redisPrefix } : {}),
      WEBHOOK_ALLOWED_HOSTS: '127.0.0.1',
      // short retries so the failing endpoint's events are delivered within the run
      WEBHOOK_RETRY_SCHEDULE_S: '1,2,4,8',
    },
  });
  try {
    const token = (await post(`${app.url}/api/v1/auth/token`, ADMIN)).json.access_token;
    const auth = { authorization: `Bearer ${token}` };
    for (let i = 0; i < ENDPOINTS; i++) {
      await post(
        `${app.url}/api/v1/webhooks`,
        { url: `http://127.0.0.1:${port}/h${i}`, events: ['post.created'] },
        auth,
      );
    }
    const probeUrl = `${app.url}/api/v1/posts?limit=1`;
    const probe = async (ms) => {
      const samples = [];
      const until = performance.now() + ms;
      while (performance.now() < until) {
        const t0 = performance.now();
        const res = await fetch(probeUrl, { headers: auth });
        await res.arrayBuffer();
        samples.push(performance.now() - t0);
        await sleep(20);
      }
      return samples;
    };
    // warm up, then the idle latency
    await probe(1_000);
    const idle = quantiles(await probe(5_000));

    // 10,000 events through the API
    const started = Date.now();
    const cpuAtStart = cpuMs(app.proc.pid);
    let next = 0;
    const writer = async () => {
      while (next < EVENTS) {
        next += 1;
        await post(
          `${app.url}/api/v1/posts`,
          { title: `bench ${next}`, body: 'webhook bench' },
          auth,
        );
      }
    };
    // the API's latency while the writers create the events and the engine delivers them
    const whileWriting = [];
    let writing = true;
    const writeProbe = (async () => {
      while (writing) {
        whileWriting.push(...(await probe(500)));
      }
    })();
    await Promise.all(Array.from({ length: WRITERS }, writer));
    const written = Date.now();
    writing = false;
    await writeProbe;
    const deliveredWhenWritten = delivered;
    const expected = EVENTS * ENDPOINTS;
    // the API's latency while the engine drains what is left (no writes any more)
    const during = [];
    let drained = false;
    const drainWatch = (async () => {
      const deadline = Date.now() + 600_000;
      while (delivered < expected - EVENTS * 0.1 && Date.now() < deadline) {
        await sleep(100);
      }
      // healthy endpoints complete; the failing one's retries may still run
      while (latencies.length < EVENTS * (ENDPOINTS - 1) && Date.now() < deadline) {
        await sleep(100);
      }
      drained = true;
    })();
    while (!drained) {
      during.push(...(await probe(500)));
    }
    await drainWatch;
    const healthyDone = lastDelivery;
    const appCpuMs = cpuMs(app.proc.pid) - cpuAtStart;
    const pending = expected - delivered;
    const elapsedS = (healthyDone - started) / 1000;
    const duringQ = quantiles(during);
    const writingQ = quantiles(whileWriting);
    const lat = quantiles(latencies);
    const result = {
      engine: REDIS_URL ? 'bullmq (PostgreSQL + Redis)' : 'in-process lease worker',
      database: POSTGRES_URL ? 'postgres' : 'sqlite',
      events: EVENTS,
      endpoints: ENDPOINTS,
      deliveries: expected,
      delivered_2xx: delivered,
      failing_endpoint_500s: failedAnswers,
      still_pending_at_end: pending,
      writes_s: (written - started) / 1000,
      events_written_per_s: Math.round(EVENTS / ((written - started) / 1000)),
      delivered_per_s: elapsedS > 0 ? Math.round(delivered / elapsedS) : 0,
      // after the writers stopped: the engine's own pace, not bounded by how fast events arrive
      delivered_per_s_after_writes: Math.round(
        (delivered - deliveredWhenWritten) / Math.max(0.001, (healthyDone - written) / 1000),
      ),
      // the app's CPU time (writes, API probes and deliveries) per delivery: load on other
      // processes of the machine changes it little, unlike the rates
      app_cpu_ms_per_delivery: round(appCpuMs / delivered),
      commit_to_delivery_ms_healthy: { p50: lat.p50, p99: lat.p99, max: lat.max },
      api_get_ms_idle: { p50: round(idle.p50), p99: round(idle.p99), n: idle.n },
      api_get_ms_while_delivering: {
        p50: round(duringQ.p50),
        p99: round(duringQ.p99),
        n: duringQ.n,
      },
      // null when nothing was left to deliver once the writes stopped (the engine kept up)
      latency_ratio:
        duringQ.n === 0
          ? null
          : { p50: round(duringQ.p50 / idle.p50), p99: round(duringQ.p99 / idle.p99) },
      // the same GET while 8 writers create the events and the engine delivers them (the writes'
      // own cost is in it too)
      api_get_ms_while_writing: {
        p50: round(writingQ.p50),
        p99: round(writingQ.p99),
        n: writingQ.n,
      },
      latency_ratio_while_writing: {
        p50: round(writingQ.p50 / idle.p50),
        p99: round(writingQ.p99 / idle.p99),
      },
    };
    console.log(JSON.stringify(result, null, 2));
    return result;
  } finally {
    receiver.closeAllConnections();
    receiver.close();
    await app.stop();
    await database.drop();
    await dropRedisKeys(redisPrefix);
  }
}

/** Redis: removes the keys the app left under its prefix (queued retries, counters). */
async function dropRedisKeys(prefix) {
  if (!REDIS_URL) {
    return;
  }
  const { Redis } = await import('ioredis');
  const redis = new Redis(REDIS_URL, { lazyConnect: true, maxRetriesPerRequest: 1 });
  try {
    await redis.connect();
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 500);
      cursor = next;
      if (keys.length > 0) {
        await redis.unlink(...keys);
      }
    } while (cursor !== '0');
  } finally {
    redis.disconnect();
  }
}

function round(x) {
  return Math.round(x * 100) / 100;
}
