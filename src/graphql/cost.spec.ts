import 'reflect-metadata';
import { buildSchema, getIntrospectionQuery, parse } from 'graphql';
import { describe, expect, it } from 'vitest';
import { MAX_QUERY_COST, operationCost } from './cost.js';
import { parseDateTime } from './scalars/date-time.scalar.js';

const schema = buildSchema(`
  directive @cost(weight: Int!) on FIELD_DEFINITION
  type Query {
    me: User
    users(first: Int, last: Int): UserConnection!
    admins: [User!]
    search(first: Int): [User!]! @cost(weight: 10)
    posts(first: Int): [Post!]!
  }
  type UserConnection { edges: [UserEdge!]! nodes: [User!]! totalCount: Int! pageInfo: PageInfo! }
  type PageInfo { hasNextPage: Boolean! endCursor: String }
  type UserEdge { cursor: String! node: User! }
  type User { id: ID! name: String! tags: [String!]! friends(first: Int): [User!]! }
  type Post { id: ID! body: String! @cost(weight: 20) }
`);

const cost = (query: string, variables?: Record<string, unknown>) =>
  operationCost(schema, parse(query), variables, undefined);

describe('operationCost (docs/graphql.md "Limits")', () => {
  it('charges 1 per field, scalars included (a scalar list is one field); __typename is free', () => {
    expect(cost('{ me { id name tags } }')).toBe(1 + 3);
    expect(cost('{ __typename }')).toBe(0);
    expect(cost('{ me { __typename } }')).toBe(1);
  });

  it('multiplies lists by first/last, 20 by default; a connection multiplies only edges/nodes', () => {
    expect(cost('{ users(first: 10) { nodes { id } } }')).toBe(1 + 10 * (1 + 1));
    expect(cost('{ users(last: 3) { edges { cursor node { id } } } }')).toBe(
      1 + 3 * (1 + 1 + (1 + 1)),
    );
    expect(cost('{ users { totalCount pageInfo { hasNextPage } } }')).toBe(1 + 1 + (1 + 1));
    expect(cost('{ users(first: 5) { totalCount nodes { id } } }')).toBe(1 + 1 + 5 * 2);
    expect(cost('{ admins { id } }')).toBe(1 + 20 * 1);
    expect(cost('{ admins { friends(first: 2) { id } } }')).toBe(1 + 20 * (1 + 2 * 1));
  });

  it('lets @cost replace the own cost (large text fields) and reads first from variables', () => {
    expect(cost('{ search(first: 5) { id } }')).toBe(10 + 5 * 1);
    expect(cost('{ posts(first: 10) { id body } }')).toBe(1 + 10 * (1 + 20));
    expect(
      cost('query($n: Int) { users(first: $n) { nodes { friends(first: $n) { id } } } }', { n: 4 }),
    ).toBe(1 + 4 * (1 + (1 + 4 * 1)));
  });

  it('counts the alias flood of large fields far over the limit', () => {
    const flood = Array.from({ length: 1000 }, (_, i) => `p${i}: posts(first: 100) { body }`);
    expect(cost(`{ ${flood.join(' ')} }`)).toBe(1000 * (1 + 100 * 20));
    expect(cost(`{ ${flood.slice(0, 1).join(' ')} }`)).toBeGreaterThan(MAX_QUERY_COST);
  });

  it('counts fragments and inline fragments, honours @skip/@include, and stays linear on nested spreads', () => {
    expect(cost('{ me { ...F } } fragment F on User { id name }')).toBe(1 + 2);
    expect(
      cost('{ users(first: 3) { ...C } } fragment C on UserConnection { totalCount nodes { id } }'),
    ).toBe(1 + 1 + 3 * 2);
    expect(cost('query($s: Boolean!) { me { id name @skip(if: $s) } }', { s: true })).toBe(2);
    expect(cost('{ me { id ... on User { name } } }')).toBe(3);
    // 40 levels of fragments that spread the next one twice: 2^40 expansions if not memoized
    const defs = Array.from(
      { length: 40 },
      (_, i) => `fragment F${i} on User { id ${i < 39 ? `...F${i + 1} ...F${i + 1}` : ''} }`,
    );
    const started = Date.now();
    expect(cost(`{ me { ...F0 } } ${defs.join(' ')}`)).toBeGreaterThan(MAX_QUERY_COST);
    expect(Date.now() - started).toBeLessThan(1000);
  });

  it('gives the same answer from its cache', () => {
    const doc = parse('query($n: Int) { users(first: $n) { nodes { id } } }');
    expect(operationCost(schema, doc, { n: 2 }, undefined)).toBe(5);
    expect(operationCost(schema, doc, { n: 7 }, undefined)).toBe(15);
    expect(operationCost(schema, doc, { n: 2 }, undefined)).toBe(5);
  });

  it('charges introspection a tenth of a point per field, its lists as long as the schema holds', () => {
    const types = Object.keys(schema.getTypeMap()).length;
    expect(cost('{ __schema { types { name } } }')).toBe(Math.ceil((1 + 1 + types * 1) / 10));
    // aliases pay again; deeper ofType nesting costs more (less per level: most chains end early)
    const one = cost('{ __schema { types { name fields { name } } } }');
    expect(
      cost(
        '{ a: __schema { types { name fields { name } } } b: __schema { types { name fields { name } } } }',
      ),
    ).toBeGreaterThanOrEqual(2 * one - 1);
    const shallow = cost('{ __type(name: "User") { fields { type { name } } } }');
    const deep = cost(
      '{ __type(name: "User") { fields { type { name ofType { name ofType { name ofType { name } } } } } } }',
    );
    expect(deep).toBeGreaterThan(shallow);
    expect(cost('{ __typename }')).toBe(0);
  });

  it('keeps the standard introspection query within the limit, and refuses it repeated', () => {
    for (const descriptions of [true, false]) {
      const standard = getIntrospectionQuery({
        descriptions,
        specifiedByUrl: true,
        directiveIsRepeatable: true,
        schemaDescription: true,
        inputValueDeprecation: true,
      });
      const c = cost(standard);
      expect(c).toBeGreaterThan(10);
      expect(c).toBeLessThan(MAX_QUERY_COST / 2);
    }
    const body =
      '{ types { name kind fields { name args { name } type { name ofType { name } } } } }';
    const aliases = Array.from({ length: 40 }, (_, i) => `s${i}: __schema ${body}`).join(' ');
    expect(cost(`{ ${aliases} }`)).toBeGreaterThan(40 * cost(`{ __schema ${body} }`) - 40);
  });

  it('throws a GraphQLError for variables that do not coerce', () => {
    expect(() => cost('query($n: Int) { users(first: $n) { totalCount } }', { n: 'x' })).toThrow(
      /\$n/,
    );
  });
});

describe('DateTime parsing', () => {
  it('normalizes any RFC 3339 offset to UTC with milliseconds', () => {
    expect(parseDateTime('2026-11-21T23:12:14+01:00')).toBe('2026-11-21T22:12:14.000Z');
    expect(parseDateTime('2026-11-21t22:12:14.5z')).toBe('2026-11-21T22:12:14.500Z');
  });

  it('rejects missing offsets, impossible dates and other shapes', () => {
    for (const bad of [
      '2026-11-21T22:12:14',
      '2026-02-30T00:00:00Z',
      '2026-13-01T00:00:00Z',
      '1700000000',
      42,
    ]) {
      expect(() => parseDateTime(bad), String(bad)).toThrow(/RFC 3339/);
    }
  });
});
