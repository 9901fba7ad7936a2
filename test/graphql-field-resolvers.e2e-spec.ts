import { GraphQLSchemaHost } from '@nestjs/graphql';
import type { GraphQLObjectType } from 'graphql';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { gql } from './graphql-client.js';
import { ADMIN_EMAIL, ADMIN_PASSWORD, startApp, type TestApp } from './helpers/app.js';
import { createUser, tokenFor, type CreatedUser } from './helpers/factories.js';
import { request } from './helpers/http.js';

/**
 * How fields resolve: plain properties of the values resolvers return (graphql-js's default
 * resolver: `User.age`, `Post.content`, `Message.cursor`...), `@ResolveField` methods where a rule
 * or a loader is (`User.email`, `User.posts`, `Post.author`), every resolver method through Nest, so
 * the global pipe's text check runs on scalar arguments and input classes are validated.
 */
describe('GraphQL field resolution', () => {
  let t: TestApp;
  let admin: string;
  let alice: CreatedUser;
  let guest: CreatedUser;
  let roomId: string;

  beforeAll(async () => {
    t = await startApp();
    admin = await tokenFor(t.url, ADMIN_EMAIL, ADMIN_PASSWORD);
    alice = await createUser(t.url, { name: 'Alice Direct', age: 41 });
    guest = await createUser(t.url, { name: 'Gus Guest', role: 'GUEST' });
    for (const title of ['one', 'two']) {
      const res = await request(t.url, '/api/v1/posts', {
        method: 'POST',
        auth: { bearer: alice.token },
        body: { title, body: `${title} body` },
      });
      expect(res.status).toBe(201);
    }
    const room = await gql(t.url, 'mutation { createRoom(name: "field-resolution") { id } }', {
      auth: { bearer: alice.token },
    });
    expect(room.body.errors).toBeUndefined();
    roomId = room.body.data.createRoom.id as string;
  });

  afterAll(async () => {
    await t?.close();
  });

  it('leaves data fields without a resolver; fields whose value may be a promise keep one', () => {
    // Nest gives every @Field a property-read resolver; plainDataFields (src/graphql/data-fields.ts)
    // drops it, so compiled execution reads the property inline. Fails if a Nest upgrade renames
    // or reshapes that resolver (the drop would silently stop).
    const schema = t.app.get(GraphQLSchemaHost).schema;
    const field = (type: string, name: string) =>
      (schema.getType(type) as GraphQLObjectType).getFields()[name];
    for (const [type, name] of [
      ['User', 'id'],
      ['User', 'name'],
      ['User', 'age'],
      ['Post', 'title'],
      ['UserConnection', 'nodes'],
      ['UserConnection', 'edges'],
      ['UserEdge', 'cursor'],
      ['PageInfo', 'endCursor'],
    ]) {
      expect(field(type, name).resolve, `${type}.${name}`).toBeUndefined();
    }
    for (const [type, name] of [
      ['PostConnection', 'totalCount'],
      ['PageInfo', 'hasNextPage'],
      ['PageInfo', 'hasPreviousPage'],
      ['User', 'posts'],
      ['User', 'email'],
    ]) {
      expect(field(type, name).resolve, `${type}.${name}`).toBeTypeOf('function');
    }
  });

  it('serves plain properties: User.age, Post.content (= body), Message.cursor', async () => {
    const res = await gql(
      t.url,
      'query($id: ID!) { user(id: $id) { age posts(first: 2) { nodes { body content } } } }',
      { auth: { bearer: admin }, variables: { id: alice.id } },
    );
    expect(res.body.errors).toBeUndefined();
    expect(res.body.data.user).toEqual({
      age: 41,
      posts: {
        nodes: [
          { body: 'one body', content: 'one body' },
          { body: 'two body', content: 'two body' },
        ],
      },
    });
    const sent = await gql(
      t.url,
      'mutation($r: ID!) { sendMessage(roomId: $r, content: "hi") { id cursor } }',
      { auth: { bearer: alice.token }, variables: { r: roomId } },
    );
    expect(sent.body.errors).toBeUndefined();
    const cursor = Buffer.from(JSON.stringify(['msg', roomId, 1])).toString('base64url');
    expect(sent.body.data.sendMessage.cursor).toBe(cursor);
    const listed = await gql(
      t.url,
      'query($r: ID!) { room(id: $r) { messages(first: 5) { nodes { id cursor } } } }',
      { auth: { bearer: alice.token }, variables: { r: roomId } },
    );
    expect(listed.body.errors).toBeUndefined();
    expect(listed.body.data.room.messages.nodes).toEqual([
      { id: sent.body.data.sendMessage.id, cursor },
    ]);
  });

  it('answers after an update with the new body under both names', async () => {
    const created = await gql(
      t.url,
      'mutation { createPost(input: { title: "t", body: "before" }) { id content } }',
      { auth: { bearer: alice.token } },
    );
    expect(created.body.data.createPost.content).toBe('before');
    const updated = await gql(
      t.url,
      'mutation($id: ID!) { updatePost(id: $id, input: { body: "after" }) { body content } }',
      { auth: { bearer: alice.token }, variables: { id: created.body.data.createPost.id } },
    );
    expect(updated.body.errors).toBeUndefined();
    expect(updated.body.data.updatePost).toEqual({ body: 'after', content: 'after' });
    const deleted = await gql(t.url, 'mutation($id: ID!) { deletePost(id: $id) { id } }', {
      auth: { bearer: alice.token },
      variables: { id: created.body.data.createPost.id },
    });
    expect(deleted.body.errors).toBeUndefined();
  });

  it('answers a field resolver with a loader and a root field', async () => {
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

  it('checks the text of scalar arguments through the global pipe (root field and field resolver)', async () => {
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

  it('keeps @auth on root fields and the rule of User.email', async () => {
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

  it('validates input classes through Nest (createUser with a bad input)', async () => {
    const res = await gql(
      t.url,
      'mutation { createUser(input: { name: "", email: "not-an-email", password: "x" }) { id } }',
      { auth: { bearer: admin } },
    );
    expect(res.body.errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT');
    expect(JSON.stringify(res.body.errors?.[0]?.extensions?.details)).toContain('email');
  });
});
