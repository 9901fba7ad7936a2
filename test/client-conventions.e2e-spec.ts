import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { codes, gql } from './graphql-client.js';
import { ADMIN_EMAIL, ADMIN_PASSWORD, startApp, type TestApp } from './helpers/app.js';
import {
  adminClient,
  createUser,
  tokenFor,
  unique,
  type CreatedUser,
} from './helpers/factories.js';
import { request, type Client } from './helpers/http.js';
import { connect, type Socket } from './subscriptions-helpers.js';

/** Error codes of one operation over an open graphql-ws socket. */
function wsCodes(
  socket: Socket,
  payload: { query: string; variables?: Record<string, unknown>; operationName?: string },
): Promise<(string | undefined)[]> {
  return new Promise((resolve, reject) => {
    socket.client.subscribe(payload, {
      next: (value) =>
        resolve((value.errors ?? []).map((e) => e.extensions?.code as string | undefined)),
      error: (err) =>
        Array.isArray(err)
          ? resolve(err.map((e: { extensions?: { code?: string } }) => e.extensions?.code))
          : reject(err instanceof Error ? err : new Error(JSON.stringify(err))),
      complete: () => undefined,
    });
  });
}

describe('client conventions', () => {
  let t: TestApp;
  let admin: Client;
  let adminToken: string;
  let alice: CreatedUser;

  beforeAll(async () => {
    t = await startApp();
    admin = await adminClient(t.url);
    adminToken = await tokenFor(t.url, ADMIN_EMAIL, ADMIN_PASSWORD);
    alice = await createUser(t.url, { role: 'USER' });
  });
  afterAll(async () => {
    await t.close();
  });

  describe("Apollo's error codes for request errors, ours for domain errors", () => {
    it('over HTTP', async () => {
      const auth = { bearer: alice.token };
      expect(codes((await gql(t.url, '{ me { id }', { auth })).body)).toEqual([
        'GRAPHQL_PARSE_FAILED',
      ]);
      expect(codes((await gql(t.url, '{ me { nope } }', { auth })).body)).toEqual([
        'GRAPHQL_VALIDATION_FAILED',
      ]);
      const unknownOperation = await gql(t.url, 'query A { me { id } } query B { me { id } }', {
        auth,
        operationName: 'C',
      });
      expect(codes(unknownOperation.body)).toEqual(['OPERATION_RESOLUTION_FAILURE']);
      const variables = await gql(t.url, 'query($id: ID!) { user(id: $id) { id } }', {
        auth,
        variables: { id: { not: 'an id' } },
      });
      expect(codes(variables.body)).toEqual(['BAD_USER_INPUT']);
      const persisted = await request(t.url, '/graphql', {
        method: 'POST',
        auth,
        body: { extensions: { persistedQuery: { version: 1, sha256Hash: 'a'.repeat(64) } } },
      });
      expect(codes(persisted.body)).toEqual(['PERSISTED_QUERY_NOT_FOUND']);
      const csrf = await gql(t.url, '{ me { id } }', {
        method: 'GET',
        auth: { basic: [alice.email, alice.password] },
      });
      expect(csrf.status).toBe(400);
      expect(codes(csrf.body)).toEqual(['BAD_REQUEST']);
      // domain errors keep the contract's codes
      const missing = await gql(t.url, '{ user(id: "usr_nope") { id } }', { auth });
      expect(codes(missing.body)).toEqual(['NOT_FOUND']);
      const paging = await gql(t.url, '{ users(first: 101) { totalCount } }', { auth });
      expect(codes(paging.body)).toEqual(['BAD_USER_INPUT']);
      expect(paging.body.errors![0].extensions!.details).toEqual([
        expect.objectContaining({ field: 'first' }),
      ]);
    });

    it('over WebSocket', async () => {
      const socket = await connect(t.url, { bearer: alice.token });
      try {
        expect(await wsCodes(socket, { query: '{ me { id }' })).toEqual(['GRAPHQL_PARSE_FAILED']);
        expect(await wsCodes(socket, { query: '{ me { nope } }' })).toEqual([
          'GRAPHQL_VALIDATION_FAILED',
        ]);
        expect(
          await wsCodes(socket, {
            query: 'query A { me { id } } query B { me { id } }',
            operationName: 'C',
          }),
        ).toEqual(['OPERATION_RESOLUTION_FAILURE']);
        expect(
          await wsCodes(socket, {
            query: 'query($id: ID!) { user(id: $id) { id } }',
            variables: {},
          }),
        ).toEqual(['BAD_USER_INPUT']);
        expect(await wsCodes(socket, { query: '{ user(id: "usr_nope") { id } }' })).toEqual([
          'NOT_FOUND',
        ]);
      } finally {
        await socket.dispose();
      }
    });
  });

  it('refuses a batch (a JSON array) with 400 BAD_REQUEST "Operation batching disabled." and runs none of it', async () => {
    const title = `batched ${unique()}`;
    const createPost = {
      query: 'mutation($t: String!) { createPost(input: { title: $t, body: "b" }) { id } }',
      variables: { t: title },
    };
    const res = await request(t.url, '/graphql', {
      method: 'POST',
      auth: { bearer: alice.token },
      body: [createPost, createPost],
    });
    expect(res.status).toBe(400);
    expect(res.body).toEqual({
      errors: [{ message: 'Operation batching disabled.', extensions: { code: 'BAD_REQUEST' } }],
    });
    const search = await gql(t.url, `{ search(term: "${title}") { __typename } }`, {
      auth: { bearer: alice.token },
    });
    expect(search.body.data.search).toEqual([]);
  });

  describe('Admin is a Node with an id of its own', () => {
    it('lists administrators under adm_ ids that node(id:) resolves, linked to their User', async () => {
      const second = await createUser(t.url, { role: 'ADMIN' });
      const res = await gql(t.url, '{ admins { __typename id name user { id role } } }', {
        auth: { bearer: adminToken },
      });
      expect(res.body.errors).toBeUndefined();
      const mine = res.body.data.admins.find(
        (a: { user: { id: string } }) => a.user.id === second.id,
      );
      expect(mine.id).toBe(`adm_${second.id.slice(4)}`);
      expect(mine.user.role).toBe('ADMIN');
      for (const a of res.body.data.admins as { id: string; user: { id: string } }[]) {
        expect(a.id).toMatch(/^adm_/);
        expect(a.id).not.toBe(a.user.id);
      }
      const node = await gql(
        t.url,
        `{ node(id: "${mine.id}") { __typename id ... on Admin { permissions user { id } } } }`,
        { auth: { bearer: adminToken } },
      );
      expect(node.body.errors).toBeUndefined();
      expect(node.body.data.node).toMatchObject({
        __typename: 'Admin',
        id: mine.id,
        user: { id: second.id },
      });
      expect(node.body.data.node.permissions).toContain('users:create');
      // the User behind it is still the User
      const user = await gql(t.url, `{ node(id: "${second.id}") { __typename id } }`, {
        auth: { bearer: adminToken },
      });
      expect(user.body.data.node).toEqual({ __typename: 'User', id: second.id });
    });

    it('is ADMIN-only through node(id:) too, and not found for a user who is no administrator', async () => {
      const refused = await gql(t.url, `{ node(id: "adm_${alice.id.slice(4)}") { id } }`, {
        auth: { bearer: alice.token },
      });
      expect(codes(refused.body)).toEqual(['FORBIDDEN']);
      expect(refused.body.data.node).toBeNull();
      const notAdmin = await gql(t.url, `{ node(id: "adm_${alice.id.slice(4)}") { id } }`, {
        auth: { bearer: adminToken },
      });
      expect(codes(notAdmin.body)).toEqual(['NOT_FOUND']);
    });
  });

  it('reports every missing required member as "<field> is required", once, on every input', async () => {
    const doc = await request(t.url, '/api/docs-json');
    const schemas = doc.body.components.schemas as Record<string, { required?: string[] }>;
    const id = 'usr_01ARZ3NDEKTSV4RRFFQ69G5FAV';
    let checked = 0;
    for (const [path, ops] of Object.entries(
      doc.body.paths as Record<string, Record<string, any>>,
    )) {
      for (const method of ['post', 'put'] as const) {
        const ref: string | undefined =
          ops[method]?.requestBody?.content?.['application/json']?.schema?.$ref;
        const required = ref ? schemas[ref.split('/').pop()!]?.required : undefined;
        if (!required?.length) {
          continue;
        }
        const url = path.replace(/\{[^}]+\}/g, id);
        const res = await request(t.url, url, {
          method: method.toUpperCase(),
          auth: { bearer: adminToken },
          body: {},
        });
        expect(res.status, `${method} ${path}: ${res.text}`).toBe(422);
        for (const field of required) {
          const about = (res.body.error.details as { field: string; message: string }[]).filter(
            (d) => d.field === field,
          );
          expect(about, `${method} ${path} ${field}`).toEqual([
            { field, message: `${field} is required` },
          ]);
        }
        checked++;
      }
    }
    expect(checked).toBeGreaterThanOrEqual(6);
    // the case of the report: a user without an email
    const noEmail = await admin.post('/api/v1/users', { name: 'No Email' });
    expect(noEmail.body.error.details).toEqual([{ field: 'email', message: 'email is required' }]);
    // GraphQL: the schema marks the same members non-null; a missing one carries the same detail
    const viaVariables = await gql(
      t.url,
      'mutation($i: CreateUserInput!) { createUser(input: $i) { id } }',
      { auth: { bearer: adminToken }, variables: { i: { name: 'No Email' } } },
    );
    expect(codes(viaVariables.body)).toEqual(['BAD_USER_INPUT']);
    expect(viaVariables.body.errors![0].extensions!.details).toEqual([
      { field: 'email', message: 'email is required' },
    ]);
    const literal = await gql(t.url, 'mutation { createUser(input: { name: "x" }) { id } }', {
      auth: { bearer: adminToken },
    });
    expect(codes(literal.body)).toEqual(['GRAPHQL_VALIDATION_FAILED']);
    expect(literal.body.errors![0].extensions!.details).toEqual([
      { field: 'email', message: 'email is required' },
    ]);
  });

  describe('ETag on writes that return a resource', () => {
    async function getEtag(path: string, as: Client): Promise<string> {
      const res = await as.get(path);
      expect(res.status).toBe(200);
      return res.headers.get('etag')!;
    }

    it("a 201's ETag is the GET's and works as If-Match on the next PATCH, whose ETag works again", async () => {
      const created = await admin.post('/api/v1/users', {
        name: 'Etag User',
        email: `${unique()}@example.com`,
      });
      expect(created.status).toBe(201);
      const path = `/api/v1/users/${created.body.data.id}`;
      const etag = created.headers.get('etag');
      expect(etag).toMatch(/^"[^"]+"$/);
      expect(etag).toBe(await getEtag(path, admin));
      const patched = await admin.patch(
        path,
        { name: 'Etag User 2' },
        { headers: { 'if-match': etag! } },
      );
      expect(patched.status, patched.text).toBe(200);
      const next = patched.headers.get('etag');
      expect(next).not.toBe(etag);
      expect(next).toBe(await getEtag(path, admin));
      const replaced = await admin.put(
        path,
        { name: 'Etag User 3', email: created.body.data.email },
        { headers: { 'if-match': next! } },
      );
      expect(replaced.status, replaced.text).toBe(200);
      expect(replaced.headers.get('etag')).toBe(await getEtag(path, admin));
      // the 201's ETag is stale now
      const stale = await admin.patch(path, { name: 'Stale' }, { headers: { 'if-match': etag! } });
      expect(stale.status).toBe(412);
    });

    it('posts, orders, rooms and sign-up send the ETag a GET would', async () => {
      const post = await alice.client.post('/api/v1/posts', { title: 'T', body: 'B' });
      expect(post.status).toBe(201);
      const postPath = `/api/v1/posts/${post.body.data.id}`;
      expect(post.headers.get('etag')).toBe(await getEtag(postPath, alice.client));
      const patchedPost = await alice.client.patch(
        postPath,
        { title: 'T2' },
        { headers: { 'if-match': post.headers.get('etag')! } },
      );
      expect(patchedPost.status).toBe(200);
      expect(patchedPost.headers.get('etag')).toBe(await getEtag(postPath, alice.client));

      const order = await alice.client.post(`/api/v1/users/${alice.id}/orders`, {
        currency: 'EUR',
        items: [{ sku: 'BOOK-1', quantity: 1, unit_price_cents: 100 }],
      });
      expect(order.status).toBe(201);
      const orderPath = `/api/v1/orders/${order.body.data.id}`;
      expect(order.headers.get('etag')).toBe(await getEtag(orderPath, admin));
      const paid = await admin.patch(
        orderPath,
        { status: 'paid' },
        { headers: { 'if-match': order.headers.get('etag')! } },
      );
      expect(paid.status, paid.text).toBe(200);
      expect(paid.headers.get('etag')).toBe(await getEtag(orderPath, admin));

      const room = await alice.client.post('/api/v1/rooms', { name: `room ${unique()}` });
      expect(room.status).toBe(201);
      expect(room.headers.get('etag')).toBe(
        await getEtag(`/api/v1/rooms/${room.body.data.id}`, alice.client),
      );

      const email = `${unique()}@example.com`;
      const password = `pw-${unique()}-long`;
      const registered = await request(t.url, '/api/v1/auth/register', {
        method: 'POST',
        body: { name: 'Signed Up', email, password },
      });
      expect(registered.status).toBe(201);
      const self = await tokenFor(t.url, email, password);
      const selfEtag = await request(t.url, `/api/v1/users/${registered.body.data.id}`, {
        auth: { bearer: self },
      });
      expect(registered.headers.get('etag')).toBe(selfEtag.headers.get('etag'));
    });
  });
});
