import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EventsService, TOPICS } from '../src/events/events.service.js';
import { startApp, type TestApp } from './helpers/app.js';
import { adminClient, createUser, type CreatedUser } from './helpers/factories.js';
import { listening, newRoom, rawSocket, until } from './subscriptions-helpers.js';

type Raw = Awaited<ReturnType<typeof rawSocket>>;

/** A raw graphql-transport-ws socket that keeps every frame as received (the exact bytes). */
async function open(base: string, token: string) {
  const s = await rawSocket(base);
  const frames: string[] = [];
  s.ws.on('message', (data: Buffer) => frames.push(data.toString('utf8')));
  s.send({ type: 'connection_init', payload: { Authorization: `Bearer ${token}` } });
  await until(() => s.messages.some((m) => m.type === 'connection_ack'));
  return { ...s, frames };
}

function nexts(s: Raw & { frames: string[] }, id: string): string[] {
  return s.frames.filter((f) => {
    const m = JSON.parse(f) as { id?: string; type: string };
    return m.id === id && m.type === 'next';
  });
}

const SELECTION =
  'subscription($r: ID!) { messageAdded(roomId: $r) { id content author { id email } } }';

describe('fan-out to many sockets', () => {
  let t: TestApp;
  let author: CreatedUser;
  let reader: CreatedUser;
  let adminToken: string;
  const sockets: Raw[] = [];

  beforeAll(async () => {
    t = await startApp();
    [author, reader] = await Promise.all([createUser(t.url), createUser(t.url)]);
    const admin = await createUser(t.url, { role: 'ADMIN' });
    adminToken = admin.token;
    await adminClient(t.url);
  });
  afterAll(async () => {
    for (const s of sockets) {
      s.ws.close();
    }
    await t?.close();
  });

  it('sends the sockets of one credential the same bytes, and shapes each other credential’s by its own rights', async () => {
    const roomId = await newRoom(author);
    const readers = await Promise.all([1, 2, 3].map(() => open(t.url, reader.token)));
    const self = await open(t.url, author.token);
    const admin = await open(t.url, adminToken);
    sockets.push(...readers, self, admin);
    const all = [...readers, self, admin];
    all.forEach((s, i) =>
      s.send({
        id: `op-${i}`,
        type: 'subscribe',
        payload: { query: SELECTION, variables: { r: roomId } },
      }),
    );
    await listening(t, TOPICS.messageAdded(roomId), all.length);

    const sent = await author.client.post(`/api/v1/rooms/${roomId}/messages`, { content: 'hello' });
    expect(sent.status).toBe(201);
    await until(() => all.every((s, i) => nexts(s, `op-${i}`).length === 1));

    const bytes = readers.map((s, i) => nexts(s, `op-${i}`)[0].replace(`"op-${i}"`, '"op"'));
    expect(bytes[1]).toBe(bytes[0]);
    expect(bytes[2]).toBe(bytes[0]);
    const payloadOf = (s: (typeof all)[number], i: number) =>
      (JSON.parse(nexts(s, `op-${i}`)[0]) as { payload: { data: any } }).payload.data.messageAdded;
    expect(payloadOf(readers[0], 0)).toEqual({
      id: sent.body.data.id,
      content: 'hello',
      author: { id: author.id, email: null },
    });
    // the author sees its own email, an ADMIN every email
    expect(payloadOf(self, 3).author).toEqual({ id: author.id, email: author.email });
    expect(payloadOf(admin, 4).author).toEqual({ id: author.id, email: author.email });
  });
});

describe('batched event charges', () => {
  // `messageAdded(roomId) { id }` costs 2 points: 3 subscribes (6) + one event to 3 sockets (6)
  // + two more charges (4) = 16
  let t: TestApp;
  beforeAll(async () => {
    t = await startApp({ GRAPHQL_COST_BUDGET: '16' });
  });
  afterAll(async () => {
    await t?.close();
  });

  it('charges an event fanned out to one identity’s sockets together; when the sum does not fit, exactly those that fit pass', async () => {
    const author = await createUser(t.url);
    const reader = await createUser(t.url);
    const roomId = await newRoom(author);
    const readers = await Promise.all([1, 2, 3].map(() => open(t.url, reader.token)));
    try {
      readers.forEach((s) =>
        s.send({
          id: 'sub',
          type: 'subscribe',
          payload: {
            query: 'subscription($r: ID!) { messageAdded(roomId: $r) { id } }',
            variables: { r: roomId },
          },
        }),
      );
      await listening(t, TOPICS.messageAdded(roomId), 3);
      const send = async (content: string) =>
        expect(
          (await author.client.post(`/api/v1/rooms/${roomId}/messages`, { content })).status,
        ).toBe(201);

      await send('first');
      await until(() => readers.every((s) => nexts(s, 'sub').length === 1));
      await send('second');
      // every reader's answer to 'second': the two that fit get it, the third RATE_LIMITED + complete
      await until(
        () =>
          readers.filter((s) => s.messages.some((m) => m.type === 'complete')).length === 1 &&
          readers.every((s) => s.messages.filter((m) => m.id === 'sub').length >= 2),
      );

      const outcomes = readers.map((s) =>
        s.messages
          .filter((m) => m.id === 'sub')
          .map((m) =>
            m.type === 'next'
              ? m.payload.errors
                ? m.payload.errors[0].extensions.code
                : 'data'
              : m.type,
          )
          .join(' '),
      );
      expect(outcomes.sort()).toEqual(['data RATE_LIMITED complete', 'data data', 'data data']);
    } finally {
      readers.forEach((s) => s.ws.close());
    }
  });
});

describe('a group of subscribers', () => {
  let t: TestApp;
  beforeAll(async () => {
    // 64 KiB: a subscriber that stops reading passes it after a few dozen large events
    t = await startApp({
      WS_SEND_BUFFER_BYTES: String(64 * 1024),
      GRAPHQL_COST_BUDGET: '1000000',
    });
  });
  afterAll(async () => {
    await t?.close();
  });

  it('keeps serving the rest of a group when one operation completes, and two operations of one socket each get theirs', async () => {
    const author = await createUser(t.url);
    const reader = await createUser(t.url);
    const roomId = await newRoom(author);
    const sockets = await Promise.all([1, 2].map(() => open(t.url, reader.token)));
    const [a, b] = sockets;
    try {
      const subscribe = (s: Raw, id: string) =>
        s.send({
          id,
          type: 'subscribe',
          payload: { query: SELECTION, variables: { r: roomId } },
        });
      subscribe(a, 'one');
      subscribe(a, 'two');
      subscribe(b, 'one');
      await listening(t, TOPICS.messageAdded(roomId), 3);
      const send = async (content: string) =>
        expect(
          (await author.client.post(`/api/v1/rooms/${roomId}/messages`, { content })).status,
        ).toBe(201);

      await send('first');
      await until(
        () => nexts(a, 'one').length + nexts(a, 'two').length + nexts(b, 'one').length === 3,
      );
      a.send({ id: 'two', type: 'complete' });
      await until(() => t.app.get(EventsService).listenerCount(TOPICS.messageAdded(roomId)) === 2);
      await send('second');
      await until(() => nexts(a, 'one').length === 2 && nexts(b, 'one').length === 2);
      // a sentinel: 'two' on socket a would get 'second' before 'one' gets 'third' (one pass per event)
      await send('third');
      await until(() => nexts(a, 'one').length === 3);
      expect(nexts(a, 'two')).toHaveLength(1);
      const contents = (frames: string[]) =>
        frames.map(
          (f) => (JSON.parse(f) as { payload: { data: any } }).payload.data.messageAdded.content,
        );
      await until(() => nexts(b, 'one').length === 3);
      expect(contents(nexts(a, 'one'))).toEqual(['first', 'second', 'third']);
      expect(contents(nexts(b, 'one'))).toEqual(['first', 'second', 'third']);
      // the socket left: nobody listens for it any more
      sockets.forEach((s) => s.ws.close());
      await until(() => t.app.get(EventsService).listenerCount(TOPICS.messageAdded(roomId)) === 0);
    } finally {
      sockets.forEach((s) => s.ws.close());
    }
  });

  it('closes a subscriber that stops reading with 1013 once its unsent events pass WS_SEND_BUFFER_BYTES, and the rest of its group gets every event', async () => {
    const author = await createUser(t.url);
    const reader = await createUser(t.url);
    const roomId = await newRoom(author);
    const [slow, fine] = await Promise.all([1, 2].map(() => open(t.url, reader.token)));
    try {
      const subscribe = (s: Raw, id: string) =>
        s.send({
          id,
          type: 'subscribe',
          payload: {
            query: 'subscription($r: ID!) { messageAdded(roomId: $r) { content } }',
            variables: { r: roomId },
          },
        });
      subscribe(fine, 'sub');
      // 20 operations: each message is 20 frames of 4 KB for the slow socket
      for (let i = 0; i < 20; i++) {
        subscribe(slow, i === 0 ? 'sub' : `sub-${i}`);
      }
      await listening(t, TOPICS.messageAdded(roomId), 21);
      // the slow one's client stops reading: what the kernel does not take waits on the server
      (slow.ws as unknown as { _socket: { pause(): void } })._socket.pause();
      const content = 'x'.repeat(4000);
      const count = 200; // 16 MB for the slow socket: past the kernel's buffers and the 64 KiB limit
      for (let i = 0; i < count; i++) {
        expect(
          (await author.client.post(`/api/v1/rooms/${roomId}/messages`, { content })).status,
        ).toBe(201);
      }
      await until(() => nexts(fine, 'sub').length === count, 20_000);
      (slow.ws as unknown as { _socket: { resume(): void } })._socket.resume();
      const closed = await slow.closed;
      expect(closed.code).toBe(1013);
      expect(nexts(slow, 'sub').length).toBeLessThan(count);
      await until(() => t.app.get(EventsService).listenerCount(TOPICS.messageAdded(roomId)) === 1);
    } finally {
      slow.ws.close();
      fine.ws.close();
    }
  });
});
