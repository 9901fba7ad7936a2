import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GraphQLSchemaHost } from '@nestjs/graphql';
import { gql } from './graphql-client.js';
import { ADMIN_EMAIL, ADMIN_PASSWORD, startApp, type TestApp } from './helpers/app.js';
import { createUser, tokenFor, type CreatedUser } from './helpers/factories.js';
import { request } from './helpers/http.js';

/**
 * Resolvers called by graphql-js directly (src/graphql/direct-field-resolvers.ts) answer exactly as
 * through Nest's pipeline: the same text check on arguments, the same @auth decisions, the same
 * errors; and methods that need Nest (input classes) still go through it.
 */
describe('GraphQL resolvers called directly', () => {
  let t: TestApp;
  let admin: string;
  let alice: CreatedUser;
  let guest: CreatedUser;

  beforeAll(async () => {
    t = await startApp();
    admin = await tokenFor(t.url, ADMIN_EMAIL, ADMIN_PASSWORD);
    alice = await createUser(t.url, { name: 'Alice Direct' });
    guest = await createUser(t.url, { name: 'Gus Guest', role: 'GUEST' });
    for (const title of ['one', 'two']) {
      const res = await request(t.url, '/api/v1/posts', {
        method: 'POST',
        auth: { bearer: alice.token },
        body: { title, body: `${title} body` },
      });
      expect(res.status).toBe(201);
    }
  });

  afterAll(async () => {
    await t?.close();
  });

  it('serves field resolvers with scalar arguments directly', () => {
    const user = t.app.get(GraphQLSchemaHost).schema.getType('User') as any;
    // Nest's own callbacks are bound functions ("bound posts"); the direct ones are named `resolve`
    expect(user.getFields().posts.resolve.name).toBe('resolve');
    expect(user.getFields().email.resolve.name).toBe('resolve');
  });

  it('answers a field resolver and a root field as before', async () => {
    const res = await gql(
      t.url,
      `query($id: ID!) { user(id: $id) { id name email posts(first: 1) { totalCount nodes { title } pageInfo { hasNextPage endCursor } } } }`,
      { auth: { bearer: admin }, variables: { id: alice.id } },
    );
    expect(res.body.errors).toBeUndefined();
    expect(res.body.data.user).toMatchObject({
      id: alice.id,
      name: 'Alice Direct',
      email: alice.email,
      posts: { totalCount: 2, nodes: [{ title: 'one' }], pageInfo: { hasNextPage: true } },
    });
    const after = res.body.data.user.posts.pageInfo.endCursor as string;
    const next = await gql(
      t.url,
      `query($id: ID!, $after: String) { user(id: $id) { posts(first: 5, after: $after) { nodes { title } } } }`,
      { auth: { bearer: admin }, variables: { id: alice.id, after } },
    );
    expect(next.body.data.user.posts.nodes).toEqual([{ title: 'two' }]);
  });

  it('checks the text of scalar arguments as the global pipe does (root field and field resolver)', async () => {
    const root = await gql(t.url, 'query($id: ID!) { user(id: $id) { id } }', {
      auth: { bearer: admin },
      variables: { id: 'usr_\u0000' },
    });
    expect(root.body.errors?.[0]?.extensions).toMatchObject({
      code: 'BAD_USER_INPUT',
      details: [{ field: 'id', message: 'id must not contain NUL (U+0000) characters' }],
    });
    const field = await gql(
      t.url,
      'query($id: ID!, $a: String) { user(id: $id) { posts(first: 1, after: $a) { totalCount } } }',
      { auth: { bearer: admin }, variables: { id: alice.id, a: 'x\ud800y' } },
    );
    expect(field.body.errors?.[0]).toMatchObject({
      path: ['user', 'posts'],
      extensions: {
        code: 'BAD_USER_INPUT',
        details: [
          { field: 'after', message: expect.stringContaining('unpaired UTF-16 surrogate') },
        ],
      },
    });
  });

  it('keeps @auth on direct root fields and field rules inside the methods', async () => {
    // Query.admins: no arguments, ADMIN only (@auth)
    const refused = await gql(t.url, '{ admins { id } }', { auth: { bearer: guest.token } });
    expect(refused.body.errors?.[0]?.extensions?.code).toBe('FORBIDDEN');
    const allowed = await gql(t.url, '{ admins { id } }', { auth: { bearer: admin } });
    expect(allowed.body.errors).toBeUndefined();
    expect(allowed.body.data.admins.length).toBeGreaterThan(0);
    // User.email: another user's email is hidden from a non-admin (the method's own rule)
    const hidden = await gql(t.url, 'query($id: ID!) { user(id: $id) { email } }', {
      auth: { bearer: guest.token },
      variables: { id: alice.id },
    });
    expect(hidden.body.errors).toBeUndefined();
    expect(hidden.body.data.user.email).toBeNull();
  });

  it('still validates input classes through Nest (createUser with a bad input)', async () => {
    const res = await gql(
      t.url,
      'mutation { createUser(input: { name: "", email: "not-an-email", password: "x" }) { id } }',
      { auth: { bearer: admin } },
    );
    expect(res.body.errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT');
    expect(JSON.stringify(res.body.errors?.[0]?.extensions?.details)).toContain('email');
  });
});
