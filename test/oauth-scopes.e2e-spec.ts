import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TOPICS } from '../src/events/events.service.js';
import { startApp, type TestApp } from './helpers/app.js';
import { adminClient, createUser, unique, type CreatedUser } from './helpers/factories.js';
import { client, type Client } from './helpers/http.js';
import { authorize, exchangeCode, registerClient, type RegisteredClient } from './helpers/oauth.js';
import { connect, gql, listening, subscribe } from './subscriptions-helpers.js';

/** OAuth access tokens: what the user's role allows AND the scopes cover, on REST, GraphQL and WS. */
describe('OAuth access tokens and scopes', () => {
  let t: TestApp;
  let admin: Client;
  let user: CreatedUser;
  let partner: RegisteredClient;

  beforeAll(async () => {
    t = await startApp();
    admin = await adminClient(t.url);
    user = await createUser(t.url);
    partner = await registerClient(admin, {
      scopes: [
        'openid',
        'email',
        'users:read',
        'users:write',
        'orders:read',
        'posts:read',
        'posts:write',
        'messages:read',
      ],
    });
  });
  afterAll(() => t?.close());

  async function tokenFor(scope: string, who: CreatedUser = user, app = partner): Promise<string> {
    const { redirect, verifier } = await authorize(t.url, {
      client: app,
      email: who.email,
      password: who.password,
      scope,
      prompt: 'consent',
    });
    const res = await exchangeCode(t.url, app, redirect.searchParams.get('code')!, verifier);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    return res.body.access_token as string;
  }

  describe('REST', () => {
    it('serves what the scopes cover and refuses the rest with 403 insufficient_scope', async () => {
      const token = await tokenFor('openid users:read');
      const asApp = client(t.url, { bearer: token });
      const read = await asApp.get(`/api/v1/users/${user.id}`);
      expect(read.status).toBe(200);
      // it acts as the user, but the email needs the email scope
      expect(read.body.data.email).toBeNull();
      const withEmail = client(t.url, { bearer: await tokenFor('openid email users:read') });
      expect((await withEmail.get(`/api/v1/users/${user.id}`)).body.data.email).toBe(user.email);
      expect((await withEmail.get('/api/v1/auth/me')).body.data.email).toBe(user.email);

      const write = await asApp.patch(`/api/v1/users/${user.id}`, { name: 'Renamed by app' });
      expect(write.status).toBe(403);
      expect(write.body.error.code).toBe('insufficient_scope');
      expect(write.headers.get('www-authenticate')).toBe(
        'Bearer error="insufficient_scope", scope="users:write"',
      );
      const orders = await asApp.get(`/api/v1/users/${user.id}/orders`);
      expect(orders.status).toBe(403);
      expect(orders.headers.get('www-authenticate')).toContain('scope="orders:read"');
      const me = await asApp.get('/api/v1/auth/me');
      expect(me.status).toBe(200);
      expect(me.body.data.auth.method).toBe('oauth');
      expect(me.body.data.email).toBeNull();
      // nothing was written
      expect((await user.client.get(`/api/v1/users/${user.id}`)).body.data.name).not.toBe(
        'Renamed by app',
      );
    });

    it('never exceeds the role: a USER token with users:write cannot create users', async () => {
      const asApp = client(t.url, { bearer: await tokenFor('users:write') });
      const own = await asApp.patch(`/api/v1/users/${user.id}`, { name: 'Named by app' });
      expect(own.status, JSON.stringify(own.body)).toBe(200);
      const create = await asApp.post('/api/v1/users', {
        name: 'x',
        email: 'x-by-app@example.com',
      });
      expect(create.status).toBe(403);
      expect(create.body.error.code).toBe('forbidden');
    });

    it('refuses API keys and the OAuth registry to OAuth tokens whatever their scopes', async () => {
      const asApp = client(t.url, {
        bearer: await tokenFor('users:read users:write posts:write'),
      });
      const keys = await asApp.post('/api/v1/api-keys', { name: 'app key' });
      expect(keys.status).toBe(403);
      expect(keys.body.error.code).toBe('forbidden');
      expect((await asApp.get('/api/v1/oauth/grants')).status).toBe(403);
    });

    it('first-party tokens keep the full power of the role', async () => {
      expect((await user.client.get(`/api/v1/users/${user.id}/orders`)).status).toBe(200);
    });
  });

  describe('GraphQL over HTTP', () => {
    it('refuses an operation selecting a field the scopes do not cover before it runs: FORBIDDEN, requiredScopes, no data', async () => {
      const token = await tokenFor('users:read');
      const body = await gql(
        t.url,
        { bearer: token },
        `query($id: ID!) { me { id } user(id: $id) { id orders { totalCount } } }`,
        { id: user.id },
      );
      expect(body).not.toHaveProperty('data');
      expect(body.errors).toHaveLength(1);
      const err = body.errors![0] as { extensions?: { code?: string; requiredScopes?: string[] } };
      expect(err.extensions?.code).toBe('FORBIDDEN');
      expect(err.extensions?.requiredScopes).toEqual(
        expect.arrayContaining(['users:read', 'orders:read']),
      );
      // under application/graphql-response+json the refusal is a 403
      const strict = await fetch(`${t.url}/graphql`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${token}`,
          'content-type': 'application/json',
          accept: 'application/graphql-response+json',
        },
        body: JSON.stringify({ query: '{ me { id orders { totalCount } } }' }),
      });
      expect(strict.status).toBe(403);
      expect(await strict.json()).not.toHaveProperty('data');
      // the same operation within the scopes runs
      const within = await gql(t.url, { bearer: token }, '{ me { id } }');
      expect(within.data?.me).toEqual({ id: user.id });
    });

    it('reads the @auth of each object type the selection reaches: fragments and node(id:) too', async () => {
      const order = await user.client.post(`/api/v1/users/${user.id}/orders`, {
        currency: 'EUR',
        items: [{ sku: 'A', quantity: 1, unit_price_cents: 100 }],
      });
      expect(order.status).toBe(201);
      const token = await tokenFor('users:read');
      const viaFragment = await gql(
        t.url,
        { bearer: token },
        `query($id: ID!) { user(id: $id) { ...F } } fragment F on User { orders { totalCount } }`,
        { id: user.id },
      );
      expect(viaFragment).not.toHaveProperty('data');
      expect(viaFragment.errors?.[0]?.extensions).toMatchObject({
        code: 'FORBIDDEN',
        requiredScopes: expect.arrayContaining(['orders:read']),
      });
      // node(id:) needs the scope of the id's type, even when only the id is selected
      const viaNode = await gql(
        t.url,
        { bearer: token },
        `query($id: ID!) { node(id: $id) { id } }`,
        {
          id: order.body.data.id,
        },
      );
      expect(viaNode).not.toHaveProperty('data');
      expect(viaNode.errors?.[0]?.extensions).toMatchObject({
        code: 'FORBIDDEN',
        requiredScopes: ['orders:read'],
      });
      const ownUser = await gql(
        t.url,
        { bearer: token },
        `query($id: ID!) { node(id: $id) { ... on User { id } } }`,
        { id: user.id },
      );
      expect(ownUser.errors).toBeUndefined();
      expect(ownUser.data?.node).toEqual({ id: user.id });
    });

    it('needs the write scope for a mutation', async () => {
      const readOnly = await gql(
        t.url,
        { bearer: await tokenFor('posts:read') },
        'mutation { createPost(input: { title: "t", body: "b" }) { id } }',
      );
      expect(readOnly.errors?.[0]?.extensions?.code).toBe('FORBIDDEN');
      const writer = await gql(
        t.url,
        { bearer: await tokenFor('posts:write') },
        'mutation { createPost(input: { title: "by app", body: "b" }) { id title } }',
      );
      expect(writer.errors).toBeUndefined();
      expect(writer.data?.createPost.title).toBe('by app');
    });
  });

  describe('GraphQL over WebSocket', () => {
    it('accepts the token in connection_init; a subscription needs messages:read', async () => {
      const room = await user.client.post('/api/v1/rooms', { name: `room ${Date.now()}` });
      expect(room.status).toBe(201);
      const roomId = room.body.data.id as string;

      const without = await connect(t.url, { bearer: await tokenFor('users:read') });
      const refused = subscribe(without, 'subscription { newMessage { id content } }');
      const error = (await refused.waitForError()) as { extensions?: { code?: string } }[];
      expect(JSON.stringify(error)).toContain('FORBIDDEN');
      await without.dispose();

      const withScope = await connect(t.url, { bearer: await tokenFor('messages:read') });
      const sub = subscribe(
        withScope,
        'subscription($r: ID!) { messageAdded(roomId: $r) { id content } }',
        { r: roomId },
      );
      await listening(t, TOPICS.messageAdded(roomId));
      const sent = await user.client.post(`/api/v1/rooms/${roomId}/messages`, {
        content: 'hi app',
      });
      expect(sent.status).toBe(201);
      const events = await sub.waitFor(1);
      expect(events[0].messageAdded).toEqual({ id: sent.body.data.id, content: 'hi app' });
      await withScope.dispose();
    });
  });

  describe('revocation is immediate', () => {
    it('stops a token when its client is deleted', async () => {
      const app = await registerClient(admin);
      const token = await tokenFor('users:read', user, app);
      const asApp = client(t.url, { bearer: token });
      expect((await asApp.get(`/api/v1/users/${user.id}`)).status).toBe(200);
      expect((await admin.delete(`/api/v1/oauth/clients/${app.client_id}`)).status).toBe(204);
      expect((await asApp.get(`/api/v1/users/${user.id}`)).status).toBe(401);
      const body = await gql(t.url, { bearer: token }, '{ me { id } }');
      expect(body.errors?.[0]?.extensions?.code).toBe('UNAUTHENTICATED');
    });

    it('stops a token when its user is deleted', async () => {
      const member = await createUser(t.url);
      const token = await tokenFor('users:read', member);
      const asApp = client(t.url, { bearer: token });
      expect((await asApp.get(`/api/v1/users/${member.id}`)).status).toBe(200);
      expect((await admin.delete(`/api/v1/users/${member.id}`)).status).toBe(204);
      expect((await asApp.get(`/api/v1/users/${user.id}`)).status).toBe(401);
    });

    it('closes an open WebSocket with 4403 at its next operation once the grant is revoked', async () => {
      const socket = await connect(t.url, { bearer: await tokenFor('messages:read') });
      const before = subscribe(socket, 'subscription { newMessage { id } }');
      await listening(t, TOPICS.newMessage);
      expect(before.errors).toEqual([]);
      before.stop();
      const revoke = await user.client.delete(`/api/v1/oauth/grants/${partner.client_id}`);
      expect(revoke.status).toBe(204);
      // the credential door re-verifies the token (its grant) for the next operation: the grant is
      // gone, so the operation is refused and the socket closed with 4403
      subscribe(socket, 'subscription { newMessage { id } }');
      expect(await socket.closed).toBe(4403);
      await socket.dispose();
    });

    it('stops a subscription that is already streaming once its grant is revoked: 4403 at the next event, nothing delivered after', async () => {
      const app = await registerClient(admin, { scopes: ['openid', 'messages:read'] });
      const room = await user.client.post('/api/v1/rooms', { name: unique('oauth-room-') });
      expect(room.status).toBe(201);
      const roomId = room.body.data.id as string;
      const socket = await connect(t.url, { bearer: await tokenFor('messages:read', user, app) });
      const sub = subscribe(
        socket,
        'subscription($r: ID!) { messageAdded(roomId: $r) { content } }',
        { r: roomId },
      );
      await listening(t, TOPICS.messageAdded(roomId));
      const send = async (content: string) =>
        expect(
          (await user.client.post(`/api/v1/rooms/${roomId}/messages`, { content })).status,
        ).toBe(201);
      await send('before');
      await sub.waitFor(1);

      // the user revokes the app while the subscription streams
      expect((await user.client.delete(`/api/v1/oauth/grants/${app.client_id}`)).status).toBe(204);
      await send('after the revocation');
      // closed: nothing can arrive any more, so what was delivered is final
      expect(await socket.closed).toBe(4403);
      expect(sub.events.map((e) => e.messageAdded.content)).toEqual(['before']);
    });

    it('refuses a token whose claims were altered (scope widened)', async () => {
      const token = await tokenFor('users:read');
      const [h, p] = token.split('.');
      const payload = JSON.parse(Buffer.from(p, 'base64url').toString());
      const forged = `${h}.${Buffer.from(JSON.stringify({ ...payload, scope: 'users:write' })).toString('base64url')}.${token.split('.')[2]}`;
      expect((await client(t.url, { bearer: forged }).get('/api/v1/auth/me')).status).toBe(401);
    });
  });
});

describe('an idle OAuth WebSocket whose grant is revoked', () => {
  it('is closed with 4403 by the periodic check (WS_RECHECK_INTERVAL_S), without any event', async () => {
    const t = await startApp({ WS_RECHECK_INTERVAL_S: '1' });
    try {
      const admin = await adminClient(t.url);
      const user = await createUser(t.url);
      const app = await registerClient(admin, { scopes: ['openid', 'messages:read'] });
      const { redirect, verifier } = await authorize(t.url, {
        client: app,
        email: user.email,
        password: user.password,
        scope: 'messages:read',
      });
      const tokens = await exchangeCode(t.url, app, redirect.searchParams.get('code')!, verifier);
      expect(tokens.status).toBe(200);
      const socket = await connect(t.url, { bearer: tokens.body.access_token });
      const sub = subscribe(socket, 'subscription { newMessage { id } }');
      await listening(t, TOPICS.newMessage);
      expect((await user.client.delete(`/api/v1/oauth/grants/${app.client_id}`)).status).toBe(204);
      expect(await socket.closed).toBe(4403);
      expect(sub.events).toEqual([]);
    } finally {
      await t.close();
    }
  });
});
