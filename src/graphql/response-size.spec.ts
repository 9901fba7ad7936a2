import { buildSchema, graphql, type GraphQLFieldResolver } from 'graphql';
import { describe, expect, it } from 'vitest';
import { guardLargeFields, jsonSizeOf, ResponseSize } from './response-size.js';

const SDL = /* GraphQL */ `
  directive @cost(weight: Int!) on FIELD_DEFINITION
  type Post {
    title: String
    body: String @cost(weight: 20)
  }
  type Query {
    posts: [Post!]!
  }
`;

/** A schema whose `Post.body` resolver counts its calls, guarded like the app's. */
function guarded(bodies: number, bodyLength: number) {
  let calls = 0;
  const schema = buildSchema(SDL);
  const body = schema.getType('Post') as any;
  const resolve: GraphQLFieldResolver<unknown, unknown> = () => {
    calls++;
    return 'x'.repeat(bodyLength);
  };
  body.getFields().body.resolve = resolve;
  const posts = Array.from({ length: bodies }, (_, i) => ({ title: `t${i}` }));
  return {
    schema: guardLargeFields(schema),
    rootValue: { posts },
    calls: () => calls,
  };
}

describe('response size', () => {
  it('stops resolving large text fields once they pass the cap', async () => {
    const g = guarded(10, 1000);
    const size = new ResponseSize(2500);
    const res = await graphql({
      schema: g.schema,
      source: '{ posts { title body } }',
      rootValue: g.rootValue,
      contextValue: { responseSize: size },
    });
    expect(size.exceeded).toBe(true);
    // two bodies fit, the third passes the cap: the seven after it are never resolved
    expect(g.calls()).toBe(3);
    expect(res.errors?.[0]?.extensions?.code).toBe('QUERY_TOO_COMPLEX');
  });

  it('leaves contexts without a running size alone (WebSocket: the finished result is measured)', async () => {
    const g = guarded(10, 1000);
    const res = await graphql({
      schema: g.schema,
      source: '{ posts { body } }',
      rootValue: g.rootValue,
      contextValue: {},
    });
    expect(res.errors).toBeUndefined();
    expect(g.calls()).toBe(10);
  });

  it('measures a result like its JSON, within the approximation', () => {
    const data = {
      user: { id: 'usr_1', name: 'Ann', tags: ['a', 'b'], age: 3, ok: true, x: null },
    };
    const json = JSON.stringify(data).length;
    expect(Math.abs(jsonSizeOf(data) - json)).toBeLessThan(json * 0.5);
    expect(jsonSizeOf({ s: 'é'.repeat(100) })).toBeGreaterThan(200); // UTF-8 bytes of long strings
  });
});
