// Fan-out scenario: N graphql-ws subscribers spread over R rooms (round robin; R = 1 by default) and
// over the given app instances, messages posted through the REST API at a steady total rate, to the
// rooms in turn and to the instances in turn; measures delivery latency (POST sent -> event received
// by a subscriber) and delivered events per second. Run by bench/run.mjs (`npm run bench -- --only
// fanout`); see bench/README.md. Environment: BENCH_FANOUT_SUBSCRIBERS (default 200),
// BENCH_FANOUT_RATE (messages/s over all rooms, default 50), BENCH_FANOUT_ROOMS (default 1),
// BENCH_FANOUT_INSTANCES (1 or 2; 2 needs REDIS_URL).
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import WebSocket from 'ws';

const SUBSCRIPTION = `subscription($roomId: ID!) {
  messageAdded(roomId: $roomId) { id content createdAt author { id name } }
}`;

/**
 * @param {{ app: string, apps?: string[], token: string, subscribers: number, rate: number,
 *           duration: number, warmup: number, rooms?: number, onMeasureStart?: () => void }} options
 */
export async function runFanout({
  app,
  apps = [app],
  token,
  subscribers,
  rate,
  duration,
  warmup,
  rooms: roomCount = 1,
  onMeasureStart,
}) {
  const auth = {
    authorization: `Bearer ${token}`,
    'content-type': 'application/json',
    accept: 'application/json',
  };
  const rooms = [];
  for (let r = 0; r < roomCount; r++) {
    const roomRes = await fetch(`${app}/api/v1/rooms`, {
      method: 'POST',
      headers: auth,
      body: JSON.stringify({ name: `bench-fanout-${Date.now()}-${r}` }),
    });
    const room = (await roomRes.json())?.data?.id;
    if (roomRes.status !== 201 || typeof room !== 'string') {
      throw new Error(`fanout: POST /api/v1/rooms -> ${roomRes.status}`);
    }
    rooms.push(room);
  }
  /** subscribers per room */
  const perRoom = rooms.map(
    (_, r) => Math.floor(subscribers / roomCount) + (r < subscribers % roomCount ? 1 : 0),
  );
  /** the rooms whose subscribers have not all seen a probe yet */
  const unprobed = new Set(rooms);
  const probesSeen = new Map(rooms.map((room) => [room, 0]));

  // --- subscribers ---------------------------------------------------------------------------------
  /** latencies (ms) of measured messages, and per-subscriber counts of them */
  const latencies = [];
  const received = new Array(subscribers).fill(0);
  const sentAt = new Map(); // message tag -> performance.now() when its POST started
  let measuring = false;
  let lastReceipt = 0;
  const failures = [];
  const clients = [];
  const ready = [];
  for (let i = 0; i < subscribers; i++) {
    if (i > 0 && i % 100 === 0) {
      await sleep(1_000); // connect in steps: a storm of 1,000 handshakes is not what is measured
    }
    const room = rooms[i % roomCount];
    let probed = false;
    ready.push(
      new Promise((resolve) => {
        const client = subscriber({
          url: `${apps[i % apps.length].replace(/^http/, 'ws')}/graphql`,
          token,
          variables: { roomId: room },
          onTag: (tag, now) => {
            if (tag === 'probe') {
              if (!probed) {
                probed = true;
                probesSeen.set(room, probesSeen.get(room) + 1);
                if (probesSeen.get(room) === perRoom[rooms.indexOf(room)]) {
                  unprobed.delete(room);
                }
                resolve();
              }
              return;
            }
            const t0 = sentAt.get(tag);
            if (measuring && t0 !== undefined) {
              latencies.push(now - t0);
              received[i] += 1;
              lastReceipt = now;
            }
          },
          onFailure: (why) => {
            failures.push(`subscriber ${i}: ${why}`);
            resolve();
          },
        });
        clients.push(client);
      }),
    );
  }

  let posted = 0;
  const post = async (content, room = rooms[posted % roomCount]) => {
    const target = apps[Math.floor(posted / roomCount) % apps.length];
    posted += 1;
    const res = await fetch(`${target}/api/v1/rooms/${room}/messages`, {
      method: 'POST',
      headers: auth,
      body: JSON.stringify({ content }),
    });
    await res.arrayBuffer();
    if (res.status !== 201) {
      throw new Error(`POST messages -> ${res.status}`);
    }
  };

  try {
    // every subscription is live once it has seen a probe (posted until all have one)
    const allReady = Promise.all(ready);
    let settled = false;
    void allReady.then(() => (settled = true));
    const deadline = Date.now() + 60_000;
    while (!settled) {
      if (Date.now() > deadline) {
        throw new Error(
          `fanout: subscribers not live after 60 s (${failures.slice(0, 3).join('; ')})`,
        );
      }
      await Promise.all([...unprobed].map((room) => post('probe', room)));
      await Promise.race([allReady, sleep(200)]);
    }
    if (failures.length > 0) {
      throw new Error(
        `fanout: ${failures.length} subscriber failures: ${failures.slice(0, 3).join('; ')}`,
      );
    }

    // --- warm-up (not measured), then the measured window at a steady rate -------------------------
    let seq = 0;
    let postErrors = 0;
    let expectedDeliveries = 0;
    const paced = async (seconds, measure) => {
      const count = Math.max(1, Math.round(seconds * rate));
      const start = performance.now();
      const inFlight = [];
      for (let n = 0; n < count; n++) {
        const due = start + (n * 1000) / rate;
        const wait = due - performance.now();
        if (wait > 0) {
          await sleep(wait);
        }
        const tag = `m${seq++}`;
        const room = rooms[posted % roomCount];
        if (measure) {
          sentAt.set(tag, performance.now());
          expectedDeliveries += perRoom[rooms.indexOf(room)];
        }
        inFlight.push(post(tag, room).catch(() => (postErrors += 1)));
      }
      await Promise.all(inFlight);
      return { count, start };
    };
    if (warmup > 0) {
      await paced(warmup, false);
      await sleep(500);
    }
    measuring = true;
    onMeasureStart?.();
    const cpu0 = process.cpuUsage();
    const wall0 = performance.now();
    const { count, start } = await paced(duration, true);
    // wait for the tail: every expected delivery, or 5 s of silence
    const expected = expectedDeliveries;
    // (a backlogged server keeps delivering after the last post: its CPU is then measured over all
    // of its deliveries, so CPU per delivered event compares across builds)
    const postedAt = performance.now();
    while (
      latencies.length < expected &&
      performance.now() - Math.max(lastReceipt, postedAt) < 5_000
    ) {
      await sleep(20);
    }
    measuring = false;
    const windowMs = performance.now() - wall0;
    const cpu = process.cpuUsage(cpu0);

    latencies.sort((a, b) => a - b);
    const pct = (p) =>
      latencies.length
        ? latencies[Math.min(latencies.length - 1, Math.floor(p * latencies.length))]
        : NaN;
    const elapsedS = ((lastReceipt || performance.now()) - start) / 1000;
    return {
      room: rooms[0],
      subscribers,
      rate,
      messages: count,
      expected,
      delivered: latencies.length,
      lost: expected - latencies.length,
      rooms: roomCount,
      instances: apps.length,
      incompleteSubscribers: received.filter((r) => r < Math.floor(count / roomCount)).length,
      postErrors,
      eventsPerSec: latencies.length / elapsedS,
      p50Ms: pct(0.5),
      p99Ms: pct(0.99),
      maxMs: latencies[latencies.length - 1] ?? NaN,
      windowMs,
      /** this process (the subscribers and the poster): near 100% means the client is the limit */
      clientCpuPct: ((cpu.user + cpu.system) / 1000 / windowMs) * 100,
    };
  } finally {
    clients.forEach((c) => c.close());
  }
}

const NEXT = Buffer.from('"type":"next"');
const CONTENT = Buffer.from('"content":"');
const QUOTE = 0x22;

/**
 * One subscriber speaking graphql-transport-ws by hand, made cheap to receive with: 1,000 of them
 * share the load generator's CPU, so an event frame is not parsed; its message's `content` (the
 * tag) is found in the bytes and the receipt time taken. Frames that are not plain events (errors,
 * complete, anything else) are parsed and reported as failures.
 */
function subscriber({ url, token, variables, onTag, onFailure }) {
  const ws = new WebSocket(url, 'graphql-transport-ws', {
    perMessageDeflate: false,
    skipUTF8Validation: true,
  });
  let closing = false;
  ws.on('open', () =>
    ws.send(
      JSON.stringify({ type: 'connection_init', payload: { Authorization: `Bearer ${token}` } }),
    ),
  );
  ws.on('message', (data) => {
    const now = performance.now();
    const at = data.indexOf(CONTENT);
    if (at >= 0 && data.indexOf(NEXT) >= 0 && data.indexOf('"errors"') < 0) {
      const from = at + CONTENT.length;
      const to = data.indexOf(QUOTE, from);
      onTag(data.toString('latin1', from, to), now);
      return;
    }
    let message;
    try {
      message = JSON.parse(data.toString('utf8'));
    } catch {
      onFailure(`unparsable frame ${data.toString('utf8').slice(0, 200)}`);
      return;
    }
    if (message.type === 'connection_ack') {
      ws.send(
        JSON.stringify({ id: '1', type: 'subscribe', payload: { query: SUBSCRIPTION, variables } }),
      );
    } else if (message.type === 'ping') {
      ws.send(JSON.stringify({ type: 'pong' }));
    } else if (message.type !== 'pong') {
      onFailure(JSON.stringify(message).slice(0, 200));
    }
  });
  ws.on('error', (err) => onFailure(describe(err)));
  ws.on('close', (code, reason) => {
    if (!closing) {
      onFailure(`close ${code} ${reason}`);
    }
  });
  return {
    close: () => {
      closing = true;
      ws.close();
    },
  };
}

function describe(err) {
  if (err instanceof Error) {
    return err.message;
  }
  if (err && typeof err === 'object' && 'code' in err) {
    return `close ${err.code} ${err.reason ?? ''}`;
  }
  return JSON.stringify(err)?.slice(0, 200) ?? String(err);
}
