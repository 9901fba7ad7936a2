import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EventsService, TOPICS } from '../src/events/events.service.js';
import { startApp, type TestApp } from './helpers/app.js';
import {
  adminClient,
  createApiKey,
  createUser,
  unique,
  type CreatedUser,
} from './helpers/factories.js';
import type { Client } from './helpers/http.js';
import {
  connect,
  expectNoErrors,
  gql,
  listening,
  rawSocket,
  subscribe,
  type Socket,
} from './subscriptions-helpers.js';

const MESSAGE_ADDED = 'subscription($roomId: ID!) { messageAdded(roomId: $roomId) { id content } }';
const MESSAGE_ADDED_FULL = `subscription($roomId: ID!) {
  messageAdded(roomId: $roomId) { id content createdAt author { id name email } room { id name } }
}`;
const NEW_MESSAGE = 'subscription { newMessage { id content room { id } } }';
const USER_UPDATED = 'subscription($id: ID!) { userUpdated(id: $id) { id name email } }';

describe('subscriptions (graphql-ws)', () => {
  let t: TestApp;
  let admin: Client;
  let alice: CreatedUser;
  let bob: CreatedUser;
  let guest: CreatedUser;
  const sockets: Socket[] = [];

  beforeAll(async () => {
    t = await startApp();
    admin = await adminClient(t.url);
    [alice, bob, guest] = await Promise.all([
      createUser(t.url),
      createUser(t.url),
      createUser(t.url, { role: 'GUEST' }),
    ]);
  });
  afterAll(async () => {
    await Promise.all(sockets.map((s) => s.dispose()));
    await t?.close();
  });

  async function socketFor(user: CreatedUser | undefined): Promise<Socket> {
    const s = await connect(t.url, user ? { bearer: user.token } : undefined);
    sockets.push(s);
    return s;
  }

  async function newRoom(): Promise<string> {
    const res = await alice.client.post('/api/v1/rooms', { name: unique('room-') });
    expect(res.status).toBe(201);
    return res.body.data.id as string;
  }

  async function send(roomId: string, content: string, as: CreatedUser = alice): Promise<string> {
    const res = await as.client.post(`/api/v1/rooms/${roomId}/messages`, { content });
    expect(res.status, res.text).toBe(201);
    return res.body.data.id as string;
  }

  describe('messageAdded(roomId)', () => {
    it('receives the messages of its room (REST and GraphQL sends), and none of another room', async () => {
      const [room, other] = [await newRoom(), await newRoom()];
      const socket = await socketFor(guest); // GUESTs may read messages, so they may subscribe
      const sub = subscribe(socket, MESSAGE_ADDED, { roomId: room });
      await listening(t, TOPICS.messageAdded(room));

      await send(other, 'not for you');
      const viaRest = await send(room, 'via REST');
      const viaGql = await gql(
        t.url,
        { bearer: bob.token },
        'mutation($r: ID!) { sendMessage(roomId: $r, content: "via GraphQL") { id } }',
        { r: room },
      );
      expectNoErrors(viaGql);
      await send(other, 'still not for you');
      const last = await send(room, 'last');

      // events of one subscription arrive in publish order: once a sentinel sent after everything
      // is in, nothing sent before it is still on the way
      const sentinel = await send(room, 'sentinel');
      const events = await sub.waitFor(4);
      expect(sub.errors).toEqual([]);
      expect(events.map((e) => e.messageAdded)).toEqual([
        { id: viaRest, content: 'via REST' },
        { id: viaGql.data.sendMessage.id, content: 'via GraphQL' },
        { id: last, content: 'last' },
        { id: sentinel, content: 'sentinel' },
      ]);
    });

    it('shapes the payload by the selection set, and resolves author and room', async () => {
      const room = await newRoom();
      const socket = await socketFor(bob);
      const small = subscribe(
        socket,
        'subscription($roomId: ID!) { messageAdded(roomId: $roomId) { content } }',
        { roomId: room },
      );
      const full = subscribe(socket, MESSAGE_ADDED_FULL, { roomId: room });
      await listening(t, TOPICS.messageAdded(room), 2);

      const id = await send(room, 'shape me');
      const [smallEvent] = await small.waitFor(1);
      const [fullEvent] = await full.waitFor(1);
      expect(smallEvent).toEqual({ messageAdded: { content: 'shape me' } });
      expect(fullEvent.messageAdded).toEqual({
        id,
        content: 'shape me',
        createdAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
        // field rules apply to event payloads: bob may not see alice's email
        author: { id: alice.id, name: alice.body.name, email: null },
        room: { id: room, name: expect.any(String) },
      });
    });

    it('shows the author their own email in the payload', async () => {
      const room = await newRoom();
      const socket = await socketFor(alice);
      const sub = subscribe(socket, MESSAGE_ADDED_FULL, { roomId: room });
      await listening(t, TOPICS.messageAdded(room));
      await send(room, 'mine');
      const [event] = await sub.waitFor(1);
      expect(event.messageAdded.author.email).toBe(alice.email);
    });

    it('delivers a burst in commit order', async () => {
      const room = await newRoom();
      const socket = await socketFor(bob);
      const sub = subscribe(socket, MESSAGE_ADDED, { roomId: room });
      await listening(t, TOPICS.messageAdded(room));
      const sent = await Promise.all(
        Array.from({ length: 15 }, (_, i) => send(room, `burst ${i}`, i % 2 ? alice : bob)),
      );
      const events = await sub.waitFor(15);
      const listed = await guest.client.get(`/api/v1/rooms/${room}/messages?limit=100`);
      const committed = listed.body.data.map((m: { id: string }) => m.id);
      expect(new Set(committed)).toEqual(new Set(sent));
      expect(events.map((e) => e.messageAdded.id)).toEqual(committed);
    });

    it('answers NOT_FOUND for an unknown room', async () => {
      const socket = await socketFor(bob);
      const sub = subscribe(socket, MESSAGE_ADDED, { roomId: 'rom_01ARZ3NDEKTSV4RRFFQ69G5FAV' });
      const errors = (await sub.waitForError()) as { extensions?: { code?: string } }[];
      expect(errors[0]?.extensions?.code).toBe('NOT_FOUND');
    });

    it('publishes nothing for a send that fails', async () => {
      const room = await newRoom();
      const socket = await socketFor(bob);
      const sub = subscribe(socket, MESSAGE_ADDED, { roomId: room });
      await listening(t, TOPICS.messageAdded(room));
      expect(
        (await alice.client.post(`/api/v1/rooms/${room}/messages`, { content: '' })).status,
      ).toBe(422);
      expect(
        (await guest.client.post(`/api/v1/rooms/${room}/messages`, { content: 'guest' })).status,
      ).toBe(403);
      const bad = await gql(
        t.url,
        { bearer: alice.token },
        'mutation($r: ID!) { sendMessage(roomId: $r, content: "") { id } }',
        { r: room },
      );
      expect(bad.errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT');
      const ok = await send(room, 'only this');
      const sentinel = await send(room, 'sentinel');
      await sub.waitFor(2);
      expect(sub.events.map((e) => e.messageAdded.id)).toEqual([ok, sentinel]);
    });
  });

  describe('newMessage', () => {
    it("receives every room's messages", async () => {
      const [a, b] = [await newRoom(), await newRoom()];
      const socket = await socketFor(bob);
      const before = t.app.get(EventsService).listenerCount(TOPICS.newMessage);
      const sub = subscribe(socket, NEW_MESSAGE);
      await listening(t, TOPICS.newMessage, before + 1);
      const m1 = await send(a, 'in a');
      const m2 = await send(b, 'in b');
      const m3 = await send(a, 'sentinel');
      const events = await sub.waitFor(3);
      expect(events.map((e) => e.newMessage)).toEqual([
        { id: m1, content: 'in a', room: { id: a } },
        { id: m2, content: 'in b', room: { id: b } },
        { id: m3, content: 'sentinel', room: { id: a } },
      ]);
    });
  });

  describe('userUpdated(id)', () => {
    it('fires for PATCH, PUT, batch and GraphQL updateUser of that user, and not for another user', async () => {
      const target = await createUser(t.url);
      const other = await createUser(t.url);
      const socket = await socketFor(target);
      const sub = subscribe(socket, USER_UPDATED, { id: target.id });
      await listening(t, TOPICS.userUpdated(target.id));

      expect((await admin.patch(`/api/v1/users/${other.id}`, { name: 'Other 1' })).status).toBe(
        200,
      );
      expect((await admin.patch(`/api/v1/users/${target.id}`, { name: 'Patched' })).status).toBe(
        200,
      );
      expect(
        (await admin.put(`/api/v1/users/${target.id}`, { name: 'Put', email: target.email }))
          .status,
      ).toBe(200);
      const batch = await admin.post('/api/v1/users/batch', {
        operations: [
          { op: 'update', id: other.id, data: { name: 'Other 2' } },
          { op: 'update', id: target.id, data: { name: 'Batched' } },
        ],
      });
      expect(batch.status, batch.text).toBe(200);
      const viaGql = await gql(
        t.url,
        { bearer: target.token },
        'mutation($id: ID!) { updateUser(id: $id, name: "Graphed") { id name } }',
        { id: target.id },
      );
      expectNoErrors(viaGql);
      expect(
        (await target.client.patch(`/api/v1/users/${target.id}`, { name: 'Self' })).status,
      ).toBe(200);

      expect(
        (await target.client.patch(`/api/v1/users/${target.id}`, { name: 'Sentinel' })).status,
      ).toBe(200);
      const events = await sub.waitFor(6);
      expect(events.map((e) => e.userUpdated.name)).toEqual([
        'Patched',
        'Put',
        'Batched',
        'Graphed',
        'Self',
        'Sentinel',
      ]);
      // the subscriber is the user themself: they see their email
      expect(
        events.every((e) => e.userUpdated.id === target.id && e.userUpdated.email === target.email),
      ).toBe(true);
    });

    it('gives a GUEST subscriber email: null and an ADMIN the email', async () => {
      const target = await createUser(t.url);
      const guestSub = subscribe(await socketFor(guest), USER_UPDATED, { id: target.id });
      const adminSocket = await connect(t.url, {
        basic: ['admin@atrium.test', 'admin-password-123'],
      });
      sockets.push(adminSocket);
      const adminSub = subscribe(adminSocket, USER_UPDATED, { id: target.id });
      await listening(t, TOPICS.userUpdated(target.id), 2);
      await admin.patch(`/api/v1/users/${target.id}`, { age: 33 });
      const [g] = await guestSub.waitFor(1);
      const [a] = await adminSub.waitFor(1);
      expect(g.userUpdated).toEqual({ id: target.id, name: target.body.name, email: null });
      expect(a.userUpdated).toEqual({ id: target.id, name: target.body.name, email: target.email });
    });

    it('publishes nothing for a rolled-back change (failed batch, 412, 403, 422)', async () => {
      const target = await createUser(t.url);
      const socket = await socketFor(target);
      const sub = subscribe(socket, USER_UPDATED, { id: target.id });
      await listening(t, TOPICS.userUpdated(target.id));

      // the batch updates the target, then fails: the whole transaction rolls back
      const batch = await admin.post('/api/v1/users/batch', {
        operations: [
          { op: 'update', id: target.id, data: { name: 'Rolled back' } },
          { op: 'update', id: 'usr_01ARZ3NDEKTSV4RRFFQ69G5FAV', data: { name: 'nobody' } },
        ],
      });
      expect(batch.status).toBe(404);
      const stale = await admin.patch(
        `/api/v1/users/${target.id}`,
        { name: 'Stale' },
        { headers: { 'if-match': '"nope"' } },
      );
      expect(stale.status).toBe(412);
      expect(
        (await bob.client.patch(`/api/v1/users/${target.id}`, { name: 'Not yours' })).status,
      ).toBe(403);
      expect((await admin.patch(`/api/v1/users/${target.id}`, { age: 200 })).status).toBe(422);
      expect((await admin.get(`/api/v1/users/${target.id}`)).body.data.name).toBe(target.body.name);

      expect((await admin.patch(`/api/v1/users/${target.id}`, { name: 'Committed' })).status).toBe(
        200,
      );
      expect((await admin.patch(`/api/v1/users/${target.id}`, { name: 'Sentinel' })).status).toBe(
        200,
      );
      await sub.waitFor(2);
      expect(sub.events.map((e) => e.userUpdated.name)).toEqual(['Committed', 'Sentinel']);
    });

    it('answers NOT_FOUND for an unknown user id', async () => {
      const sub = subscribe(await socketFor(bob), USER_UPDATED, {
        id: 'usr_01ARZ3NDEKTSV4RRFFQ69G5FAV',
      });
      const errors = (await sub.waitForError()) as { extensions?: { code?: string } }[];
      expect(errors[0]?.extensions?.code).toBe('NOT_FOUND');
    });
  });

  describe('authentication on the socket', () => {
    it('accepts Basic, Bearer and API-key credentials in connection_init', async () => {
      const key = await createApiKey(alice.client);
      for (const auth of [
        { bearer: alice.token },
        { basic: [alice.email, alice.password] as [string, string] },
        { apiKey: key.key },
      ]) {
        const room = await newRoom();
        const socket = await connect(t.url, auth);
        sockets.push(socket);
        const sub = subscribe(socket, MESSAGE_ADDED, { roomId: room });
        await listening(t, TOPICS.messageAdded(room));
        await send(room, 'hi');
        await sub.waitFor(1);
      }
    });

    it('closes with 4403 for invalid credentials', async () => {
      for (const payload of [
        { Authorization: 'Bearer not-a-token' },
        {
          Authorization: `Basic ${Buffer.from(`${alice.email}:wrong-password`).toString('base64')}`,
        },
        { apiKey: 'atr_nonsense_key_123' },
      ]) {
        const raw = await rawSocket(t.url);
        raw.send({ type: 'connection_init', payload });
        const { code } = await raw.closed;
        expect(code, JSON.stringify(payload)).toBe(4403);
        expect(raw.messages.some((m) => m.type === 'connection_ack')).toBe(false);
      }
    });

    it('closes with 4401 when subscribing before the connection is acknowledged', async () => {
      const raw = await rawSocket(t.url);
      raw.send({ type: 'subscribe', id: '1', payload: { query: NEW_MESSAGE } });
      const { code } = await raw.closed;
      expect(code).toBe(4401);
    });

    it('refuses an anonymous subscription with UNAUTHENTICATED', async () => {
      const socket = await socketFor(undefined);
      const sub = subscribe(socket, NEW_MESSAGE);
      const errors = (await sub.waitForError()) as { extensions?: { code?: string } }[];
      expect(errors[0]?.extensions?.code).toBe('UNAUTHENTICATED');
    });

    it('stops delivering once the client unsubscribes', async () => {
      const room = await newRoom();
      const socket = await socketFor(bob);
      const sub = subscribe(socket, MESSAGE_ADDED, { roomId: room });
      await listening(t, TOPICS.messageAdded(room));
      await send(room, 'one');
      await sub.waitFor(1);
      sub.stop();
      const events = t.app.get(EventsService);
      await expect.poll(() => events.listenerCount(TOPICS.messageAdded(room))).toBe(0);
      // a second subscription on the same socket still listens: once it has 'two', the stopped one
      // would have had it too
      const witness = subscribe(socket, MESSAGE_ADDED, { roomId: room });
      await listening(t, TOPICS.messageAdded(room));
      await send(room, 'two');
      await witness.waitFor(1);
      expect(sub.events).toHaveLength(1);
    });
  });
});

describe('shutdown', () => {
  it('closes open sockets with 1001 when the app shuts down', async () => {
    const t = await startApp();
    const user = await createUser(t.url);
    const socket = await connect(t.url, { bearer: user.token });
    subscribe(socket, NEW_MESSAGE);
    await listening(t, TOPICS.newMessage);
    await t.close();
    expect(await socket.closed).toBe(1001);
  });
});
