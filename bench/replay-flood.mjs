// Replay flood: self-registered USERs at the default limits resume `messageAdded(roomId, after:)`
// from the oldest cursor of a room of 1,000 messages x 4,000 characters, with every socket and
// operation the default caps allow (WS_MAX_CONNECTIONS_PER_IDENTITY sockets x
// WS_MAX_OPERATIONS_PER_CONNECTION operations each), first one USER, then two together. Reports the
// app's RSS growth (peak during the flood over the RSS before it; target < 150 MB) and another
// user's GraphQL request latency during the flood against its idle latency (target within 5x), and
// what the flood got (events, RATE_LIMITED, other errors).
// Usage: npm run bench -- --replay-flood (builds if needed), or npm run build && node bench/replay-flood.mjs
// Environment: FLOOD_SOCKETS (10), FLOOD_OPERATIONS (50) per socket, FLOOD_MESSAGES (1000),
// FLOOD_CONTENT (4000 characters); REDIS_URL / DATABASE_URL as the app reads them (SQLite by default).
import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath, pathToFileURL } from 'node:url';
import WebSocket from 'ws';
import { post, quantiles, startBuiltApp, timedMeQuery } from './plumbing.mjs';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const ADMIN = { email: 'bench-admin@example.com', password: 'bench-password-123' };
const SOCKETS = Number(process.env.FLOOD_SOCKETS ?? 10);
const OPERATIONS = Number(process.env.FLOOD_OPERATIONS ?? 50);
const MESSAGES = Number(process.env.FLOOD_MESSAGES ?? 1000);
const CONTENT = Number(process.env.FLOOD_CONTENT ?? 4000);
const RESUME = `subscription($roomId: ID!, $after: String) {
  messageAdded(roomId: $roomId, after: $after) { id content cursor author { name } }
}`;

let started;
process.on('exit', () => started?.proc.kill('SIGKILL'));

/** The app's resident set size in bytes (Linux). */
function rss(pid) {
  const line = readFileSync(`/proc/${pid}/status`, 'utf8')
    .split('\n')
    .find((l) => l.startsWith('VmRSS:'));
  return Number(/(\d+)/.exec(line ?? '')?.[1] ?? 0) * 1024;
}

async function register(app, n) {
  const who = {
    name: `Flood ${n}`,
    email: `flood-${n}@example.com`,
    password: 'flood-password-123',
  };
  await post(`${app}/api/v1/auth/register`, who);
  const token = (
    await post(`${app}/api/v1/auth/token`, { email: who.email, password: who.password })
  ).json.access_token;
  return { token, headers: { authorization: `Bearer ${token}` } };
}

/** One flooding socket: subscribes OPERATIONS replays from `after`, reads and counts what comes. */
async function floodSocket(app, token, roomId, after, tally) {
  const ws = new WebSocket(`${app.replace(/^http/, 'ws')}/graphql`, 'graphql-transport-ws');
  const open = new Set();
  ws.on('message', (data) => {
    const text = data.toString('utf8');
    const type = /"type":"([a-z_]+)"/.exec(text)?.[1];
    if (type === 'connection_ack') {
      for (let i = 0; i < OPERATIONS; i++) {
        open.add(String(i));
        ws.send(
          JSON.stringify({
            id: String(i),
            type: 'subscribe',
            payload: { query: RESUME, variables: { roomId, after } },
          }),
        );
      }
      return;
    }
    const id = /"id":"([^"]+)"/.exec(text)?.[1];
    if (type === 'next' && !text.includes('"errors"')) {
      tally.events += 1;
      return;
    }
    if (type === 'next' || type === 'error') {
      const code = /"code":"([A-Z_]+)"/.exec(text)?.[1] ?? 'unknown';
      tally.codes[code] = (tally.codes[code] ?? 0) + 1;
      open.delete(id);
    } else if (type === 'complete') {
      open.delete(id);
    }
  });
  ws.on('close', (code) => {
    tally.closes[code] = (tally.closes[code] ?? 0) + 1;
    open.clear();
  });
  ws.on('error', () => undefined);
  await new Promise((ok, fail) => {
    ws.once('open', ok);
    ws.once('error', fail);
  });
  ws.send(
    JSON.stringify({ type: 'connection_init', payload: { Authorization: `Bearer ${token}` } }),
  );
  return { ws, open, tally };
}

/** The other user's request latency, measured back to back until `stop()`. */
function probe(app, headers) {
  const latencies = [];
  let running = true;
  const done = (async () => {
    while (running) {
      const { ms, status } = await timedMeQuery(app, headers);
      if (status !== 200) {
        throw new Error(`probe answered ${status}`);
      }
      latencies.push(ms);
      await sleep(20);
    }
  })();
  return {
    stop: async () => {
      running = false;
      await done;
      return quantiles(latencies);
    },
  };
}

async function flood(app, pid, attackers, roomId, after, bystander, idle) {
  const before = rss(pid);
  let peak = before;
  const sampler = setInterval(() => (peak = Math.max(peak, rss(pid))), 25);
  const tally = { events: 0, codes: {}, closes: {} };
  const latency = probe(app, bystander.headers);
  const t0 = Date.now();
  const sockets = [];
  const settle = async () =>
    Promise.all(
      sockets.map(
        (s) =>
          new Promise((ok) => {
            s.ws.once('message', ok); // the pong: every subscribe before it was processed
            s.ws.send(JSON.stringify({ type: 'ping' }));
          }),
      ),
    );
  await Promise.all(
    attackers.map(async (attacker) => {
      for (let i = 0; i < SOCKETS; i++) {
        sockets.push(await floodSocket(app, attacker.token, roomId, after, tally));
      }
    }),
  );
  // until every operation ended (refused or RATE_LIMITED) or got its whole replay, at most 120 s
  // (without `after`, until the subscriptions are set up: a ping round trip on every socket)
  const perOp = MESSAGES - 1;
  while (after !== null && Date.now() - t0 < 120_000) {
    await sleep(100);
    const open = sockets.reduce((n, s) => n + s.open.size, 0);
    if (open === 0 || tally.events >= open * perOp) {
      break;
    }
  }
  if (after === null) {
    await sleep(500); // the last subscribe messages of each socket
    await settle();
  }
  const seconds = (Date.now() - t0) / 1000;
  const busy = await latency.stop();
  clearInterval(sampler);
  sockets.forEach((s) => s.ws.terminate());
  const growthMb = (peak - before) / 2 ** 20;
  console.log(
    `${attackers.length} USER(s), ${sockets.length} sockets x ${OPERATIONS} operations: ` +
      `RSS ${(before / 2 ** 20).toFixed(0)} -> peak ${(peak / 2 ** 20).toFixed(0)} MB (+${growthMb.toFixed(0)} MB, target < 150); ` +
      `other user's { me } p50 ${busy.p50.toFixed(1)} ms, p99 ${busy.p99.toFixed(1)} ms, max ${busy.max.toFixed(1)} ms ` +
      `(${busy.n} requests; idle p50 ${idle.p50.toFixed(1)} ms: ${(busy.p50 / idle.p50).toFixed(1)}x, target within 5x); ` +
      `${seconds.toFixed(1)} s; flood got ${tally.events} events, errors ${JSON.stringify(tally.codes)}, closes ${JSON.stringify(tally.closes)}`,
  );
  return { growthMb, ratio: busy.p50 / idle.p50 };
}

/** Runs the floods and prints their figures; true when every flood is within the targets. */
export async function runReplayFlood() {
  started = await startBuiltApp({
    root: ROOT,
    name: 'replay-flood',
    admin: ADMIN,
    // the default cost budget and WebSocket caps (startBuiltApp lifts only the request limits)
    env: {},
  });
  const { url: app, proc } = started;
  const author = await register(app, 'author');
  const room = await post(`${app}/api/v1/rooms`, { name: 'flood' }, author.headers);
  const roomId = room.json.data.id;
  const filler = 'x'.repeat(CONTENT - 10);
  let next = 0;
  await Promise.all(
    Array.from({ length: 8 }, async () => {
      while (next < MESSAGES) {
        const n = next++;
        await post(
          `${app}/api/v1/rooms/${roomId}/messages`,
          { content: `${String(n).padStart(9, '0')} ${filler}` },
          author.headers,
        );
      }
    }),
  );
  const after = Buffer.from(JSON.stringify(['msg', roomId, 1])).toString('base64url');
  const bystander = await register(app, 'bystander');
  const idleProbe = probe(app, bystander.headers);
  await sleep(3_000);
  const idle = await idleProbe.stop();
  console.log(
    `idle: other user's { me } p50 ${idle.p50.toFixed(1)} ms, p99 ${idle.p99.toFixed(1)} ms`,
  );

  const one = await flood(app, proc.pid, [await register(app, 1)], roomId, after, bystander, idle);
  const two = await flood(
    app,
    proc.pid,
    [await register(app, 2), await register(app, 3)],
    roomId,
    after,
    bystander,
    idle,
  );
  // the reference: the same sockets and operations subscribing without `after` (no replay at all)
  console.log('reference, the same flood without after (live only):');
  await flood(app, proc.pid, [await register(app, 4)], roomId, null, bystander, idle);
  await started.stop();
  const ok = [one, two].every((r) => r.growthMb < 150 && r.ratio <= 5);
  console.log(ok ? 'within targets' : 'OUTSIDE the targets');
  return ok;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  runReplayFlood().then(
    (ok) => {
      process.exitCode = ok ? 0 : 1;
    },
    (err) => {
      console.error(err);
      process.exitCode = 1;
    },
  );
}
