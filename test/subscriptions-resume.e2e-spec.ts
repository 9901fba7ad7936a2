import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EventsService, TOPICS } from '../src/events/events.service.js';
import { startApp, startPair, usingRedis, type TestApp } from './helpers/app.js';
import { createUser, type CreatedUser } from './helpers/factories.js';
import { client } from './helpers/http.js';
import { scaled } from './helpers/time.js';
import {
  connect,
  gql,
  listening,
  rawSocket,
  subscribe,
  newRoom,
  until,
  type Socket,
  type Subscription,
} from './subscriptions-helpers.js';

/** `messageAdded(after:)`: the replay of what a subscriber missed, then the live stream. */
const RESUME = `subscription($roomId: ID!, $after: String) {
  messageAdded(roomId: $roomId, after: $after) { id content cursor author { name } }
}`;

interface Added {
  messageAdded: { id: string; content: string; cursor: string; author: { name: string } | null };
}

type Errors = { message: string; extensions?: { code?: string; details?: unknown[] } }[];

/** Sends over GraphQL and returns the message's cursor (what a client stores). */
async function sendForCursor(base: string, user: CreatedUser, roomId: string, content: string) {
  const body = await gql(
    base,
    { bearer: user.token },
    'mutation($r: ID!, $c: String!) { sendMessage(roomId: $r, content: $c) { id cursor } }',
    { r: roomId, c: content },
  );
  expect(body.errors).toBeUndefined();
  return body.data.sendMessage as { id: string; cursor: string };
}

async function post(base: string, user: CreatedUser, roomId: string, content: string) {
  const res = await client(base, { bearer: user.token }).post(`/api/v1/rooms/${roomId}/messages`, {
    content,
  });
  expect(res.status).toBe(201);
  return res.body.data.id as string;
}

/** `count` messages `${prefix}1…` posted `parallel` at a time. */
async function postMany(
  base: string,
  user: CreatedUser,
  roomId: string,
  prefix: string,
  count: number,
  parallel = 8,
) {
  let next = 0;
  await Promise.all(
    Array.from({ length: parallel }, async () => {
      while (next < count) {
        next += 1;
        await post(base, user, roomId, `${prefix}${next}`);
      }
    }),
  );
}

/** Every message id of the room in commit order (REST, paged). */
async function committedIds(user: CreatedUser, roomId: string): Promise<string[]> {
  const ids: string[] = [];
  for (let page = 1; ; page++) {
    const res = await user.client.get(`/api/v1/rooms/${roomId}/messages?limit=100&page=${page}`);
    expect(res.status).toBe(200);
    ids.push(...res.body.data.map((m: { id: string }) => m.id));
    if (res.body.data.length < 100) {
      return ids;
    }
  }
}

function ids(sub: Subscription<Added>): string[] {
  return sub.events.map((e) => e.messageAdded.id);
}

describe('resumable messageAdded (after: a Message.cursor)', () => {
  let t: TestApp;
  let author: CreatedUser;
  let reader: CreatedUser;
  const sockets: Socket[] = [];

  beforeAll(async () => {
    // the default cost budget (GRAPHQL_COST_BUDGET, 10 000 points per 60 s): a full replay fits it
    t = await startApp({ GRAPHQL_COST_BUDGET: undefined, GRAPHQL_COST_WINDOW_S: undefined });
    [author, reader] = await Promise.all([createUser(t.url), createUser(t.url)]);
  });
  afterAll(async () => {
    await Promise.all(sockets.map((s) => s.dispose()));
    await t?.close();
  });

  async function socketFor(user: CreatedUser): Promise<Socket> {
    const s = await connect(t.url, { bearer: user.token });
    sockets.push(s);
    return s;
  }

  it(
    'replays exactly 1,000 missed messages in order, charged from the default budget, then goes live without a duplicate',
    async () => {
      const roomId = await newRoom(author);
      const seen = await sendForCursor(t.url, author, roomId, 'seen');
      await postMany(t.url, author, roomId, 'missed ', 1000);
      const socket = await socketFor(reader);
      const sub = subscribe<Added>(socket, RESUME, { roomId, after: seen.cursor });
      await sub.waitFor(1000, 60_000);
      const committed = await committedIds(author, roomId);
      expect(committed).toHaveLength(1001);
      expect(ids(sub)).toEqual(committed.slice(1));
      expect(sub.errors).toEqual([]);
      // the replay carries what live events carry
      expect(sub.events[0]?.messageAdded.author?.name).toEqual(expect.any(String));

      await listening(t, TOPICS.messageAdded(roomId));
      const live = await post(t.url, author, roomId, 'live');
      await sub.waitFor(1001);
      // a sentinel: a duplicate would be sent before it on the same socket, so it would arrive first
      const sentinel = await post(t.url, author, roomId, 'sentinel');
      await sub.waitFor(1002);
      expect(ids(sub)).toEqual([...committed.slice(1), live, sentinel]);
      // each cursor resumes right after its message
      const cursors = sub.events.map((e) => e.messageAdded.cursor);
      expect(new Set(cursors).size).toBe(1002);

      // every replayed event was charged: at least 5 points each, from a budget of 10 000
      const spent = await reader.client.get('/api/v1/rooms?limit=1');
      expect(Number(spent.headers.get('ratelimit-cost-remaining'))).toBeLessThan(10_000 - 5 * 1001);
    },
    scaled(120_000),
  ); // 1,001 sends: slow on a loaded machine

  it(
    'ends with RESYNC_REQUIRED past 1,000 missed messages and sends nothing; the socket stays usable',
    async () => {
      const roomId = await newRoom(author);
      const seen = await sendForCursor(t.url, author, roomId, 'seen');
      await postMany(t.url, author, roomId, 'missed ', 1001);
      const other = await createUser(t.url);
      const socket = await socketFor(other);
      const sub = subscribe<Added>(socket, RESUME, { roomId, after: seen.cursor });
      const errors = (await sub.waitForError()) as Errors;
      expect(errors[0]?.extensions?.code).toBe('RESYNC_REQUIRED');
      await until(() => sub.completed || sub.errors.length > 0);
      expect(sub.events).toEqual([]);

      // the same socket: the latest cursor (from Room.messages) resumes with nothing missed, then live
      const page = await gql(
        t.url,
        { bearer: other.token },
        'query($r: ID!) { room(id: $r) { messages(first: 1, after: null) { totalCount } } }',
        { r: roomId },
      );
      expect(page.data.room.messages.totalCount).toBe(1002);
      const latest = await sendForCursor(t.url, author, roomId, 'latest');
      const again = subscribe<Added>(socket, RESUME, { roomId, after: latest.cursor });
      await listening(t, TOPICS.messageAdded(roomId));
      const live = await post(t.url, author, roomId, 'after the resync');
      await again.waitFor(1);
      expect(ids(again)).toEqual([live]);
    },
    scaled(120_000),
  );

  it('answers BAD_USER_INPUT and sends no event for a malformed cursor, a cursor of another room or one not reached yet', async () => {
    const roomId = await newRoom(author);
    const otherRoom = await newRoom(author);
    const foreign = await sendForCursor(t.url, author, otherRoom, 'elsewhere');
    const mine = await sendForCursor(t.url, author, roomId, 'here');
    const ahead = Buffer.from(JSON.stringify(['msg', roomId, 50])).toString('base64url');
    const socket = await socketFor(reader);
    // a sentinel on the same socket: a refused subscription that still listened would get each
    // message as soon as this one does (the same event, fanned out in one pass)
    const sentinel = subscribe<Added>(socket, RESUME, { roomId });
    await listening(t, TOPICS.messageAdded(roomId));
    let heard = 0;
    for (const after of ['not a cursor', '', foreign.cursor, ahead, mine.id]) {
      const sub = subscribe<Added>(socket, RESUME, { roomId, after });
      const errors = (await sub.waitForError()) as Errors;
      expect(errors[0]?.extensions?.code, after).toBe('BAD_USER_INPUT');
      expect(errors[0]?.extensions?.details).toEqual([
        { field: 'after', message: expect.any(String) },
      ]);
      await post(t.url, author, roomId, `while refused ${after}`);
      heard += 1;
      await sentinel.waitFor(heard);
      expect(sub.events).toEqual([]);
    }
  });

  it('loses nothing and repeats nothing when it resumes while messages are being sent', async () => {
    const roomId = await newRoom(author);
    const second = await createUser(t.url);
    const first = await sendForCursor(t.url, author, roomId, 'first');
    let sending = true;
    let sent = 0;
    const senders = [author, second].map(async (user) => {
      while (sending) {
        sent += 1;
        await post(t.url, user, roomId, `concurrent ${sent}`);
      }
    });
    const received: string[] = [];
    try {
      // five reconnects in a row, each resuming from the last cursor received, all mid-stream
      let cursor = first.cursor;
      for (let round = 0; round < 5; round++) {
        const socket = await connect(t.url, { bearer: reader.token });
        const sub = subscribe<Added>(socket, RESUME, { roomId, after: cursor });
        await sub.waitFor(3 + round, 10_000);
        await socket.dispose(); // dropped, whatever is in flight
        expect(sub.errors).toEqual([]);
        received.push(...ids(sub));
        cursor = sub.events.at(-1)!.messageAdded.cursor;
      }
    } finally {
      sending = false;
      await Promise.all(senders);
    }
    const committed = await committedIds(author, roomId);
    expect(received).toEqual(committed.slice(1, received.length + 1));
  });
});

describe('resuming on another instance', () => {
  let pair: Awaited<ReturnType<typeof startPair>>;
  let author: CreatedUser;
  let reader: CreatedUser;

  beforeAll(async () => {
    pair = await startPair();
    [author, reader] = await Promise.all([createUser(pair.a.url), createUser(pair.a.url)]);
  });
  afterAll(async () => {
    await pair?.close();
  });

  it('a cursor received from one instance resumes on the other: the replay, then its live messages', async () => {
    const { a, b } = pair;
    const roomId = await newRoom(author);
    const onA = await connect(a.url, { bearer: reader.token });
    const sub = subscribe<Added>(onA, RESUME, { roomId });
    await listening(a, TOPICS.messageAdded(roomId));
    await post(a.url, author, roomId, 'before the drop');
    await sub.waitFor(1);
    await onA.dispose(); // instance A goes away for this client
    const cursor = sub.events[0].messageAdded.cursor;

    await postMany(a.url, author, roomId, 'missed on A ', 5, 2);
    await postMany(b.url, author, roomId, 'missed on B ', 5, 2);
    const onB = await connect(b.url, { bearer: reader.token });
    try {
      const resumed = subscribe<Added>(onB, RESUME, { roomId, after: cursor });
      await resumed.waitFor(10);
      await listening(b, TOPICS.messageAdded(roomId));
      const live = [await post(b.url, author, roomId, 'live on B')];
      if (usingRedis) {
        // with the shared bus, sends on A reach B's subscriber too
        live.push(await post(a.url, author, roomId, 'live on A'));
      }
      await resumed.waitFor(10 + live.length);
      // a sentinel: a duplicate would be sent before it on the same socket, so it would arrive first
      await post(b.url, author, roomId, 'sentinel on B');
      await resumed.waitFor(11 + live.length);
      const committed = await committedIds(author, roomId);
      expect(ids(resumed)).toEqual(committed.slice(1));
      expect(committed.slice(-live.length - 1, -1)).toEqual(live);
    } finally {
      await onB.dispose();
    }
  });
});

describe('a resumed subscriber that falls behind', () => {
  let t: TestApp;
  let author: CreatedUser;
  let reader: CreatedUser;

  beforeAll(async () => {
    // the reader stops reading while 2,600 messages are sent (~25 s on PostgreSQL on a loaded
    // machine): with the default 12 s keep-alive the server would drop it as dead first
    t = await startApp({ WS_KEEPALIVE_MS: '300000' });
    [author, reader] = await Promise.all([createUser(t.url), createUser(t.url)]);
  });
  afterAll(async () => {
    await t?.close();
  });

  it(
    'is ended with RESYNC_REQUIRED once more than 1,000 messages wait for it; its socket stays usable',
    async () => {
      const roomId = await newRoom(author);
      const { cursor } = await sendForCursor(t.url, author, roomId, 'start');
      const raw = await rawSocket(t.url);
      try {
        raw.send({ type: 'connection_init', payload: { Authorization: `Bearer ${reader.token}` } });
        await until(() => raw.messages.some((m) => m.type === 'connection_ack'), 5_000);
        raw.send({
          id: 'behind',
          type: 'subscribe',
          payload: { query: RESUME, variables: { roomId, after: cursor } },
        });
        await listening(t, TOPICS.messageAdded(roomId));
        // the reader stops reading: the kernel's buffers fill, then the server holds the rest
        const socket = (raw.ws as unknown as { _socket: { pause(): void; resume(): void } })
          ._socket;
        socket.pause();
        const content = 'x'.repeat(4_000);
        let sent = 0;
        await Promise.all(
          Array.from({ length: 8 }, async () => {
            while (sent < 2_600) {
              sent += 1;
              await post(t.url, author, roomId, content);
            }
          }),
        );
        socket.resume();
        await until(
          () => raw.messages.some((m) => m.id === 'behind' && m.type === 'complete'),
          30_000,
          () => `${raw.messages.length} frames, socket state ${raw.ws.readyState}`,
        );
        const frames = raw.messages.filter((m) => m.id === 'behind');
        const last = frames.at(-2);
        expect(last.type).toBe('next');
        expect(
          last.payload.errors.map((e: { extensions: { code: string } }) => e.extensions.code),
        ).toEqual(['RESYNC_REQUIRED']);
        // fewer messages than were sent reached it: the rest was not queued for it
        expect(frames.length - 2).toBeLessThan(2_600);
        // the room lets go of it, and the socket runs the next operation
        await until(
          () => t.app.get(EventsService).listenerCount(TOPICS.messageAdded(roomId)) === 0,
          5_000,
        );
        raw.send({ id: 'me', type: 'subscribe', payload: { query: '{ me { id } }' } });
        await until(() => raw.messages.some((m) => m.id === 'me' && m.type === 'next'), 5_000);
      } finally {
        raw.ws.close();
      }
    },
    scaled(120_000),
  );
});
