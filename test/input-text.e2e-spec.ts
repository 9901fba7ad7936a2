import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_EMAIL, ADMIN_PASSWORD, startApp, type TestApp } from './helpers/app.js';
import { adminClient, createUser, unique, type CreatedUser } from './helpers/factories.js';
import { request, type Client, type TestResponse } from './helpers/http.js';
import { gql } from './graphql-client.js';

const NUL = 'a\u0000b';
const LONE = 'x\uD800y'; // an unpaired high surrogate (JSON: "x\ud800y")

/** A 422 naming `field`, in the envelope. */
function expect422(res: TestResponse, field: string) {
  expect(res.status, JSON.stringify(res.body)).toBe(422);
  expect(res.body.error.code).toBe('validation_failed');
  expect(res.body.error.details).toContainEqual({ field, message: expect.any(String) });
}

describe('text the database cannot store, and timestamps that are not RFC 3339: 422, never 500', () => {
  let t: TestApp;
  let admin: Client;
  let alice: CreatedUser;
  let room: string;
  let post: string;

  beforeAll(async () => {
    t = await startApp();
    admin = await adminClient(t.url);
    alice = await createUser(t.url);
    room = (await alice.client.post('/api/v1/rooms', { name: unique('room') })).body.data.id;
    post = (await alice.client.post('/api/v1/posts', { title: 'ok', body: 'ok' })).body.data.id;
  });
  afterAll(async () => {
    await t?.close();
  });

  const email = () => `${unique()}@example.com`;

  it.each([
    ['NUL', NUL],
    ['a lone surrogate', LONE],
  ])('refuses %s in the auth inputs (register, token, refresh), anonymously', async (_, bad) => {
    const post = (path: string, body: unknown) =>
      request(t.url, `/api/v1/auth/${path}`, { method: 'POST', body });
    expect422(
      await post('register', { name: bad, email: email(), password: 'password-12345' }),
      'name',
    );
    expect422(
      await post('register', {
        name: 'n',
        email: `${bad}@example.com`,
        password: 'password-12345',
      }),
      'email',
    );
    expect422(
      await post('register', { name: 'n', email: email(), password: `pw-${bad}-long-enough` }),
      'password',
    );
    expect422(
      await post('token', { email: `${bad}@example.com`, password: 'password-12345' }),
      'email',
    );
    expect422(
      await post('token', { email: ADMIN_EMAIL, password: `${ADMIN_PASSWORD}${bad}` }),
      'password',
    );
    expect422(await post('refresh', { refresh_token: `rt_${bad}-0123456789` }), 'refresh_token');
  });

  it.each([
    ['NUL', NUL],
    ['a lone surrogate', LONE],
  ])(
    'refuses %s in every text member of users, posts, rooms, messages, orders and api keys',
    async (_, bad) => {
      expect422(await admin.post('/api/v1/users', { name: bad, email: email() }), 'name');
      expect422(
        await admin.post('/api/v1/users', { name: 'n', email: `${bad}@example.com` }),
        'email',
      );
      expect422(
        await admin.put(`/api/v1/users/${alice.id}`, { name: bad, email: alice.email }),
        'name',
      );
      expect422(await admin.patch(`/api/v1/users/${alice.id}`, { name: bad }), 'name');
      expect422(
        await admin.patch(`/api/v1/users/${alice.id}`, { password: `long-password-${bad}` }),
        'password',
      );
      const batch = await admin.post('/api/v1/users/batch', {
        operations: [{ op: 'create', data: { name: bad, email: email() } }],
      });
      expect(batch.status).toBe(422);
      expect(batch.body.error.details).toContainEqual({
        index: 0,
        field: 'name',
        message: expect.any(String),
      });

      expect422(await alice.client.post('/api/v1/posts', { title: bad, body: 'b' }), 'title');
      expect422(await alice.client.post('/api/v1/posts', { title: 't', body: bad }), 'body');
      expect422(await alice.client.patch(`/api/v1/posts/${post}`, { body: bad }), 'body');
      expect422(
        await alice.client.put(`/api/v1/posts/${post}`, { title: bad, body: 'b' }),
        'title',
      );
      expect422(await alice.client.post('/api/v1/rooms', { name: bad }), 'name');
      expect422(
        await alice.client.post(`/api/v1/rooms/${room}/messages`, { content: bad }),
        'content',
      );
      expect422(
        await alice.client.post(`/api/v1/users/${alice.id}/orders`, {
          items: [{ sku: bad, quantity: 1, unit_price_cents: 1 }],
          currency: 'EUR',
        }),
        'items.0.sku',
      );
      expect422(
        await alice.client.post(`/api/v1/users/${alice.id}/orders`, {
          items: [{ sku: 'A-1', quantity: 1, unit_price_cents: 1 }],
          currency: bad,
        }),
        'currency',
      );
      expect422(await alice.client.post('/api/v1/api-keys', { name: bad }), 'name');
      // nothing was stored under such a name
      const me = await alice.client.get('/api/v1/auth/me');
      expect(me.body.data.name).not.toContain('\u0000');
    },
  );

  it('answers 401, not 500, to Basic credentials whose email holds NUL', async () => {
    const res = await request(t.url, '/api/v1/users', {
      auth: { basic: [`${NUL}@example.com`, 'password-12345'] },
    });
    expect(res.status).toBe(401);
  });

  it.each([
    '2030-W01-1',
    '-9999-01-01',
    '+275760-09-14T00:00:00Z',
    '2030-02-30T00:00:00Z',
    '2030-01-01',
    '2030-01-01T25:00:00Z',
    '2030-01-01T00:00:00',
  ])('refuses expires_at %s with 422', async (expiresAt) => {
    expect422(
      await alice.client.post('/api/v1/api-keys', { name: 'k', expires_at: expiresAt }),
      'expires_at',
    );
  });

  it('still accepts RFC 3339 expiries with an offset and fractional seconds', async () => {
    const res = await alice.client.post('/api/v1/api-keys', {
      name: 'k',
      expires_at: '2030-01-01T00:00:00.123+02:00',
    });
    expect(res.status).toBe(201);
    expect(res.body.data.expires_at).toBe('2029-12-31T22:00:00.123Z');
  });

  it.each([
    ['null', 'application/merge-patch+json'],
    ['null', 'application/json'],
    ['[]', 'application/json'],
    ['"name"', 'application/merge-patch+json'],
    ['42', 'application/json'],
  ])(
    'answers 400 in the envelope to a PATCH body %s (%s): a merge patch must be an object',
    async (raw, type) => {
      const before = await alice.client.get(`/api/v1/users/${alice.id}`);
      for (const path of [`/api/v1/users/${alice.id}`, `/api/v1/posts/${post}`]) {
        const res = await alice.client.patch(path, undefined, {
          rawBody: raw,
          headers: { 'content-type': type },
        });
        expect(res.status, path).toBe(400);
        expect(res.body.error).toEqual({
          code: 'bad_request',
          message: 'The request body must be a JSON object',
          details: [{ field: 'body', message: 'the body must be a JSON object' }],
        });
      }
      const after = await alice.client.get(`/api/v1/users/${alice.id}`);
      expect(after.body.data.updated_at).toBe(before.body.data.updated_at);
    },
  );

  it('answers 400 to a POST or PUT body that is JSON null', async () => {
    const headers = { 'content-type': 'application/json' };
    expect(
      (await admin.post('/api/v1/users', undefined, { rawBody: 'null', headers })).status,
    ).toBe(400);
    expect(
      (await admin.put(`/api/v1/users/${alice.id}`, undefined, { rawBody: 'null', headers }))
        .status,
    ).toBe(400);
    expect(
      (await alice.client.post('/api/v1/posts', undefined, { rawBody: 'null', headers })).status,
    ).toBe(400);
  });

  describe('GraphQL: BAD_USER_INPUT with details', () => {
    const bad = (res: TestResponse, field: string) => {
      expect(res.status).toBe(200);
      const error = res.body.errors?.[0];
      expect(error?.extensions?.code, JSON.stringify(res.body)).toBe('BAD_USER_INPUT');
      expect(error?.extensions?.details).toContainEqual({ field, message: expect.any(String) });
    };

    it.each([
      ['NUL', NUL],
      ['a lone surrogate', LONE],
    ])('refuses %s in input objects and scalar arguments', async (_, text) => {
      const adminAuth = { basic: [ADMIN_EMAIL, ADMIN_PASSWORD] as [string, string] };
      const aliceAuth = { bearer: alice.token };
      bad(
        await gql(t.url, 'mutation($i: CreateUserInput) { createUser(input: $i) { id } }', {
          auth: adminAuth,
          variables: { i: { name: text, email: email() } },
        }),
        'name',
      );
      bad(
        await gql(t.url, 'mutation($n: String) { createUser(name: $n) { id } }', {
          auth: adminAuth,
          variables: { n: text },
        }),
        'name',
      );
      bad(
        await gql(
          t.url,
          'mutation($id: ID!, $i: UpdateUserInput) { updateUser(id: $id, input: $i) { id } }',
          {
            auth: aliceAuth,
            variables: { id: alice.id, i: { name: text } },
          },
        ),
        'name',
      );
      bad(
        await gql(t.url, 'mutation($i: CreatePostInput!) { createPost(input: $i) { id } }', {
          auth: aliceAuth,
          variables: { i: { title: 't', body: text } },
        }),
        'body',
      );
      bad(
        await gql(t.url, 'mutation($n: String!) { createRoom(name: $n) { id } }', {
          auth: aliceAuth,
          variables: { n: text },
        }),
        'name',
      );
      bad(
        await gql(
          t.url,
          'mutation($r: ID!, $c: String!) { sendMessage(roomId: $r, content: $c) { id } }',
          {
            auth: aliceAuth,
            variables: { r: room, c: text },
          },
        ),
        'content',
      );
      bad(
        await gql(t.url, 'query($q: String!) { search(term: $q) { __typename } }', {
          auth: aliceAuth,
          variables: { q: text },
        }),
        'term',
      );
    });

    it('refuses a crafted cursor whose value holds NUL with BAD_USER_INPUT', async () => {
      const cursor = Buffer.from(JSON.stringify(['users:created_at', NUL, 'usr_x'])).toString(
        'base64url',
      );
      const res = await gql(
        t.url,
        'query($a: String) { users(first: 2, after: $a) { nodes { id } } }',
        {
          auth: { bearer: alice.token },
          variables: { a: cursor },
        },
      );
      bad(res, 'after');
    });
  });
});
