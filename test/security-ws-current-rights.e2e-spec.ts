import { randomBytes } from 'node:crypto';
import jwt from 'jsonwebtoken';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TOPICS } from '../src/events/events.service.js';
import { PUBLIC_URL, startApp, type TestApp } from './helpers/app.js';
import { adminClient, createApiKey, createUser, unique } from './helpers/factories.js';
import type { Client } from './helpers/http.js';
import { connect, listening, subscribe, type Socket } from './subscriptions-helpers.js';

/** One operation over an open socket: its result (data and errors). */
function run(socket: Socket, query: string, variables?: Record<string, unknown>) {
  return new Promise<{ data?: any; errors?: any[] }>((resolve) => {
    let result: { data?: any; errors?: any[] } = {};
    socket.client.subscribe(
      { query, variables },
      {
        next: (r) => (result = r as typeof result),
        error: (err) =>
          resolve({ errors: Array.isArray(err) ? err : [{ message: String(err), closed: true }] }),
        complete: () => resolve(result),
      },
    );
  });
}

const CREATE_USER = `mutation($input: CreateUserInput!) { createUser(input: $input) { id role } }`;
const newUserInput = (role = 'USER') => ({
  name: 'Made over WS',
  email: `${unique()}@example.com`,
  password: `pw-${unique()}-long`,
  role,
});

/** An open WebSocket runs every operation and delivers every event with the caller's current rights. */
describe('WebSocket callers keep only their current rights', () => {
  let t: TestApp;
  let admin: Client;
  beforeAll(async () => {
    t = await startApp();
    admin = await adminClient(t.url);
  });
  afterAll(async () => {
    await t.close();
  });

  it('a demoted ADMIN cannot createUser (nor promote itself) over its open socket', async () => {
    const boss = await createUser(t.url, { role: 'ADMIN' });
    const socket = await connect(t.url, { bearer: boss.token });
    try {
      const before = await run(socket, CREATE_USER, { input: newUserInput('ADMIN') });
      expect(before.errors, JSON.stringify(before.errors)).toBeUndefined();
      expect(before.data.createUser.role).toBe('ADMIN');

      const demoted = await admin.patch(
        `/api/v1/users/${boss.id}`,
        { role: 'USER' },
        { headers: { 'content-type': 'application/merge-patch+json' } },
      );
      expect(demoted.status, demoted.text).toBe(200);

      const after = await run(socket, CREATE_USER, { input: newUserInput('ADMIN') });
      expect(after.errors?.[0]?.extensions?.code).toBe('FORBIDDEN');
      const promote = await run(
        socket,
        `mutation($id: ID!) { updateUser(id: $id, input: { role: ADMIN }) { role } }`,
        { id: boss.id },
      );
      expect(promote.errors?.[0]?.extensions?.code).toBe('FORBIDDEN');
      // still a valid USER: the socket stays open and serves what a USER may do
      const me = await run(socket, '{ me { id role } }');
      expect(me.data.me).toEqual({ id: boss.id, role: 'USER' });
    } finally {
      await socket.dispose();
    }
  });

  it('a deleted user’s socket refuses its next operation and is closed with 4403', async () => {
    const u = await createUser(t.url);
    const socket = await connect(t.url, { bearer: u.token });
    expect((await run(socket, '{ me { id } }')).data.me.id).toBe(u.id);
    expect((await admin.delete(`/api/v1/users/${u.id}`)).status).toBe(204);
    const refused = await run(socket, '{ users(first: 5) { edges { node { email } } } }');
    expect(refused.data).toBeUndefined();
    expect(await socket.closed).toBe(4403);
  });

  it('a revoked API key’s socket is closed with 4403', async () => {
    const u = await createUser(t.url);
    const key = await createApiKey(u.client);
    const socket = await connect(t.url, { apiKey: key.key });
    expect((await run(socket, '{ me { id } }')).data.me.id).toBe(u.id);
    expect((await u.client.delete(`/api/v1/api-keys/${key.id}`)).status).toBe(204);
    const refused = await run(socket, '{ me { id } }');
    expect(refused.data).toBeUndefined();
    expect(await socket.closed).toBe(4403);
  });

  it('a password change ends the sockets opened with the old password or a token issued before it', async () => {
    const u = await createUser(t.url);
    const byToken = await connect(t.url, { bearer: u.token });
    const byPassword = await connect(t.url, { basic: [u.email, u.password] });
    expect((await run(byPassword, '{ me { id } }')).data.me.id).toBe(u.id);
    // `iat` has one-second resolution: a token issued in the second of the change still passes
    const iatMs = (jwt.decode(u.token) as { iat: number }).iat * 1000;
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, iatMs + 1_050 - Date.now())));
    const changed = await u.client.patch(
      `/api/v1/users/${u.id}`,
      { password: `pw-${unique()}-changed` },
      { headers: { 'content-type': 'application/merge-patch+json' } },
    );
    expect(changed.status, changed.text).toBe(200);
    expect((await run(byPassword, '{ me { id } }')).data).toBeUndefined();
    expect(await byPassword.closed).toBe(4403);
    expect((await run(byToken, '{ me { id } }')).data).toBeUndefined();
    expect(await byToken.closed).toBe(4403);
  });

  it('closes the socket with 4403 when its JWT expires, on time', async () => {
    const u = await createUser(t.url);
    const lifetimeS = 2;
    const token = jwt.sign({ role: 'USER' }, t.config.jwtPrivateKey!, {
      algorithm: 'RS256',
      subject: u.id,
      issuer: PUBLIC_URL,
      audience: 'atrium-api',
      expiresIn: lifetimeS,
      jwtid: randomBytes(12).toString('base64url'),
    });
    const expiresAt = (jwt.decode(token) as { exp: number }).exp * 1000;
    const socket = await connect(t.url, { bearer: token });
    expect((await run(socket, '{ me { id } }')).data.me.id).toBe(u.id);
    const code = await socket.closed;
    const closedAt = Date.now();
    expect(code).toBe(4403);
    expect(closedAt).toBeGreaterThanOrEqual(expiresAt - 50);
    expect(closedAt).toBeLessThan(expiresAt + 1_000);
  });

  it('a deleted user stops receiving messages: the next event closes its socket and is not delivered', async () => {
    const author = await createUser(t.url);
    const reader = await createUser(t.url);
    const room = await author.client.post('/api/v1/rooms', { name: unique('room-') });
    expect(room.status).toBe(201);
    const roomId = room.body.data.id as string;
    const socket = await connect(t.url, { bearer: reader.token });
    const sub = subscribe(
      socket,
      'subscription($r: ID!) { messageAdded(roomId: $r) { id content } }',
      { r: roomId },
    );
    await listening(t, TOPICS.messageAdded(roomId));
    const send = async (content: string) =>
      expect(
        (await author.client.post(`/api/v1/rooms/${roomId}/messages`, { content })).status,
      ).toBe(201);
    await send('before');
    await sub.waitFor(1);

    expect((await admin.delete(`/api/v1/users/${reader.id}`)).status).toBe(204);
    await send('after the deletion');
    // closed: nothing can arrive any more, so what was delivered is final
    expect(await socket.closed).toBe(4403);
    expect(sub.events.map((e) => e.messageAdded.content)).toEqual(['before']);
  });

  it('resolves each event with the subscriber’s current role: a demoted ADMIN stops seeing emails', async () => {
    const boss = await createUser(t.url, { role: 'ADMIN' });
    const watched = await createUser(t.url);
    const socket = await connect(t.url, { bearer: boss.token });
    try {
      const sub = subscribe(
        socket,
        'subscription($id: ID!) { userUpdated(id: $id) { id name email } }',
        { id: watched.id },
      );
      await listening(t, TOPICS.userUpdated(watched.id));
      const rename = async (name: string) =>
        expect(
          (
            await watched.client.patch(
              `/api/v1/users/${watched.id}`,
              { name },
              { headers: { 'content-type': 'application/merge-patch+json' } },
            )
          ).status,
        ).toBe(200);
      await rename('First');
      await sub.waitFor(1);
      expect(sub.events[0].userUpdated.email).toBe(watched.email);

      const demoted = await admin.patch(
        `/api/v1/users/${boss.id}`,
        { role: 'USER' },
        { headers: { 'content-type': 'application/merge-patch+json' } },
      );
      expect(demoted.status).toBe(200);
      await rename('Second');
      await sub.waitFor(2);
      expect(sub.events[1].userUpdated).toEqual({ id: watched.id, name: 'Second', email: null });
    } finally {
      await socket.dispose();
    }
  });
});

describe('idle WebSockets whose credentials lapse', () => {
  it('are closed with 4403 by the periodic check (WS_RECHECK_INTERVAL_S), without any operation', async () => {
    const t = await startApp({ WS_RECHECK_INTERVAL_S: '1' });
    try {
      const admin = await adminClient(t.url);
      const u = await createUser(t.url);
      const key = await createApiKey(u.client);
      const byKey = await connect(t.url, { apiKey: key.key });
      const byToken = await connect(t.url, { bearer: u.token });
      const other = await createUser(t.url);
      const bystander = await connect(t.url, { bearer: other.token });

      expect((await u.client.delete(`/api/v1/api-keys/${key.id}`)).status).toBe(204);
      expect(await byKey.closed).toBe(4403);
      expect((await admin.delete(`/api/v1/users/${u.id}`)).status).toBe(204);
      expect(await byToken.closed).toBe(4403);
      // a socket whose credentials are still good stays open
      expect((await run(bystander, '{ me { id } }')).data.me.id).toBe(other.id);
      await bystander.dispose();
    } finally {
      await t.close();
    }
  });
});
