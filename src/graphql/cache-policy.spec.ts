import { ApolloServer } from '@apollo/server';
import { ApolloServerPluginCacheControl } from '@apollo/server/plugin/cacheControl';
import { buildSchema, getOperationAST, parse } from 'graphql';
import { describe, expect, it } from 'vitest';
import { operationCachePolicy } from './cache-policy.js';

const SDL = /* GraphQL */ `
  enum CacheControlScope {
    PUBLIC
    PRIVATE
  }
  directive @cacheControl(
    maxAge: Int
    scope: CacheControlScope
    inheritMaxAge: Boolean
  ) on FIELD_DEFINITION | OBJECT | INTERFACE | UNION

  interface Node @cacheControl(maxAge: 100) {
    id: ID!
  }
  type User implements Node @cacheControl(maxAge: 30) {
    id: ID!
    name: String
    email: String @cacheControl(maxAge: 0, scope: PRIVATE)
    posts: PostConnection
    friend: User
    secret: Secret
  }
  type Post implements Node @cacheControl(maxAge: 60) {
    id: ID!
    title: String
    tagline: String @cacheControl(maxAge: 10)
    author: User
  }
  type Secret @cacheControl(maxAge: 120, scope: PRIVATE) {
    code: String
  }
  type PostConnection @cacheControl(inheritMaxAge: true) {
    nodes: [Post!]!
    totalCount: Int
  }
  type Plain {
    value: String
  }
  type Query {
    user: User
    post: Post
    node: Node
    plain: Plain
    count: Int
    hinted: Int @cacheControl(maxAge: 300)
    inheriting: PostConnection
  }
`;

const post = { id: 'p1', title: 'T', tagline: 'hi', author: null, __typename: 'Post' };
const user = {
  id: 'u1',
  name: 'N',
  email: 'e',
  posts: { nodes: [post], totalCount: 1 },
  friend: null,
  secret: { code: 'c' },
  __typename: 'User',
};
const root = {
  user,
  post: { ...post, author: user },
  node: user,
  plain: { value: 'v' },
  count: 1,
  hinted: 2,
  inheriting: { nodes: [post], totalCount: 1 },
};

/** What Apollo's own plugin puts in Cache-Control when every selected field resolves. */
async function apolloHeader(server: ApolloServer, query: string): Promise<string | undefined> {
  const res = await server.executeOperation({ query });
  if (res.body.kind === 'single') {
    expect(res.body.singleResult.errors).toBeUndefined();
  }
  return res.http.headers.get('cache-control');
}

function ourHeader(query: string): string {
  const schema = buildSchema(SDL);
  const document = parse(query);
  const policy = operationCachePolicy(schema, document, getOperationAST(document)!);
  return policy ? `max-age=${policy.maxAge}, ${policy.scope.toLowerCase()}` : 'no-store';
}

const QUERIES = [
  '{ count }',
  '{ hinted }',
  '{ user { id name } }',
  '{ user { id email } }',
  '{ post { id title } }',
  '{ post { id tagline } }',
  '{ post { title author { name } } }',
  '{ user { posts { totalCount nodes { title } } } }',
  '{ inheriting { totalCount } }',
  '{ user { secret { code } } }',
  '{ plain { value } }',
  '{ hinted user { name } }',
  '{ __typename }',
  '{ ...F } fragment F on Query { post { title } }',
  '{ user { ... on User { name } } }',
  '{ a: user { name } b: post { title } }',
  '{ node { id } }',
];

describe('operationCachePolicy', () => {
  it('equals what Apollo cache-control plugin computes, when every selected field resolves', async () => {
    const server = new ApolloServer({
      schema: buildSchema(SDL),
      rootValue: root,
      plugins: [ApolloServerPluginCacheControl({ defaultMaxAge: 0 })],
    });
    await server.start();
    try {
      for (const query of QUERIES) {
        expect(ourHeader(query), query).toBe(await apolloHeader(server, query));
      }
    } finally {
      await server.stop();
    }
  });

  it('is never less restrictive: fields of every possible type count, resolved or not', async () => {
    // node is a Post at run time: Apollo never sees User.email; the document's policy counts it
    const query = '{ node { id ... on User { email } } }';
    const server = new ApolloServer({
      schema: buildSchema(SDL),
      rootValue: { ...root, node: post },
      plugins: [ApolloServerPluginCacheControl({ defaultMaxAge: 0 })],
    });
    await server.start();
    try {
      expect(await apolloHeader(server, query)).toBe('max-age=100, public');
    } finally {
      await server.stop();
    }
    expect(ourHeader(query)).toBe('no-store');
  });
});
