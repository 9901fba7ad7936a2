import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { startApp, type TestApp } from './helpers/app.js';
import { createUser, type CreatedUser } from './helpers/factories.js';
import { client } from './helpers/http.js';
import { connectionParams, gql, newRoom, until } from './subscriptions-helpers.js';

/**
 * `messageAdded(after:)` replays are bounded per identity (docs/realtime.md, "Replays are bounded"):
 * read in pages as the consumer reads, charged before they are read, at most 2 at once per identity.
 */
const RESUME = `subscription($roomId: ID!, $after: String) {
  messageAdded(roomId: $roomId, after: $after) { id content cursor }
}`;

/** base64url(["msg", roomId, seq]): what Message.cursor is. */
const cursorOf = (roomId: string, seq: number) =>
  Buffer.from(JSON.stringify(['msg', roomId, seq])).toString('base64url');

async function postMany(base: string, user: CreatedUser, roomId: string, texts: string[]) {
  let next = 0;
  await Promise.all(
    Array.from({ length: 8 }, async () => {
      while (next < texts.length) {
        const content = texts[next++];
        const res = await client(base, { bearer: user.token }).post(
          `/api/v1/rooms/${roomId}/messages`,
          { content },
        );
        expect(res.status).toBe(201);
      }
    }),
  );
}

interface OpLog {
  /** data events received */
  events: number;
  /** error codes received (a `next` with errors, or an `error` message) */
  errors: string[];
  completed: boolean;
}

/**
 * A graphql-transport-ws socket that counts what each operation receives (nothing kept of the
 * payloads: the test process shares its heap with the app under test), and `order`, the operation
 * id of every data event in arrival order.
 */
async function countingSocket(base: string, user: CreatedUser, keepOrder = false) {
  const ws = new WebSocket(`${base.replace(/^http/, 'ws')}/graphql`, 'graphql-transport-ws');
  const ops = new Map<string, OpLog>();
  const order: string[] = [];
  let acked!: () => void;
  const ack = new Promise<void>((resolve) => (acked = resolve));
  ws.on('message', (data: Buffer) => {
    const text = data.toString('utf8');
    // the type and id sit before the payload: read them without parsing 4 KB of content
    const type = /"type":"([a-z_]+)"/.exec(text)?.[1];
    if (type === 'connection_ack') {
      acked();
      return;
    }
    const id = /"id":"([^"]+)"/.exec(text)?.[1] ?? '';
    const op = ops.get(id);
    if (!op) {
      return;
    }
    if (type === 'next' && !text.includes('"errors"')) {
      op.events += 1;
      if (keepOrder) {
        order.push(id);
      }
    } else if (type === 'next' || type === 'error') {
      op.errors.push(/"code":"([A-Z_]+)"/.exec(text)?.[1] ?? 'unknown');
    } else if (type === 'complete') {
      op.completed = true;
    }
  });
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('error', reject);
  });
  ws.send(
    JSON.stringify({
      type: 'connection_init',
      payload: connectionParams({ bearer: user.token }),
    }),
  );
  await ack;
  return {
    ws,
    ops,
    order,
    subscribe(id: string, roomId: string, after: string) {
      ops.set(id, { events: 0, errors: [], completed: false });
      ws.send(
        JSON.stringify({
          id,
          type: 'subscribe',
          payload: { query: RESUME, variables: { roomId, after } },
        }),
      );
    },
  };
}

describe('bounded replays of messageAdded(after:)', () => {
  let t: TestApp;
  let author: CreatedUser;
  const sockets: WebSocket[] = [];

  beforeAll(async () => {
    // the default WebSocket caps and cost budget; requests are not what these tests are about
    t = await startApp({
      GRAPHQL_COST_BUDGET: undefined,
      GRAPHQL_COST_WINDOW_S: undefined,
      WS_MAX_CONNECTIONS_PER_IDENTITY: undefined,
      WS_MAX_OPERATIONS_PER_CONNECTION: undefined,
    });
    author = await createUser(t.url);
  });
  afterAll(async () => {
    sockets.forEach((ws) => ws.terminate());
    await t?.close();
  });

  it('runs at most 2 replays of one identity at once: a third starts only once one of the first two has caught up', async () => {
    const roomId = await newRoom(author);
    await postMany(
      t.url,
      author,
      roomId,
      Array.from({ length: 300 }, (_, i) => `m${i + 1}`),
    );
    const reader = await createUser(t.url);
    const s = await countingSocket(t.url, reader, true);
    sockets.push(s.ws);
    for (const id of ['a', 'b', 'c']) {
      s.subscribe(id, roomId, cursorOf(roomId, 1));
    }
    await until(() => [...s.ops.values()].every((op) => op.events === 299), 60_000);
    // whichever replay got no slot at first starts after one of the others has delivered all of its
    // replay (they subscribe concurrently: the order they get their slots in is not fixed)
    const firsts = ['a', 'b', 'c'].map((id) => s.order.indexOf(id));
    const lasts = ['a', 'b', 'c'].map((id) => s.order.lastIndexOf(id));
    expect(Math.max(...firsts)).toBeGreaterThan(Math.min(...lasts));
    expect([...s.ops.values()].flatMap((op) => op.errors)).toEqual([]);
  }, 120_000);

  it('one USER replaying a 1,000 x 4,000-character room with every socket and operation the default caps allow grows the heap by less than 100 MB, and every operation ends or completes its replay', async () => {
    const roomId = await newRoom(author);
    const big = 'x'.repeat(3_990);
    await postMany(
      t.url,
      author,
      roomId,
      Array.from({ length: 1_000 }, (_, i) => `${String(i).padStart(9, '0')} ${big}`),
    );
    const attacker = await createUser(t.url);
    const before = process.memoryUsage().heapUsed;
    let peak = before;
    const sampler = setInterval(() => {
      peak = Math.max(peak, process.memoryUsage().heapUsed);
    }, 10);
    try {
      const flood = [];
      for (let i = 0; i < 10; i++) {
        const s = await countingSocket(t.url, attacker);
        sockets.push(s.ws);
        flood.push(s);
        for (let k = 0; k < 50; k++) {
          s.subscribe(`s${i}o${k}`, roomId, cursorOf(roomId, 1));
        }
      }
      const ops = flood.flatMap((s) => [...s.ops.values()]);
      // each operation ends: refused (its budget or the caps), or its whole replay delivered
      await until(() => ops.every((op) => op.errors.length > 0 || op.events === 999), 120_000);
      const delivered = ops.reduce((n, op) => n + op.events, 0);
      // the default budget (10 000 points, 5 per event of this selection) bounds the whole flood
      expect(delivered).toBeLessThan(10_000 / 5);
      expect(ops.some((op) => op.errors.includes('RATE_LIMITED'))).toBe(true);
    } finally {
      clearInterval(sampler);
    }
    expect((peak - before) / 2 ** 20).toBeLessThan(100);
    // another user is served meanwhile
    const other = await createUser(t.url);
    const body = await gql(t.url, { bearer: other.token }, '{ me { id } }');
    expect(body.errors).toBeUndefined();
  }, 240_000);
});
