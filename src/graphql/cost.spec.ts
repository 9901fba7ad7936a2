import 'reflect-metadata';
import { buildSchema, parse } from 'graphql';
import { describe, expect, it } from 'vitest';
import { operationCost } from './cost.js';
import { parseDateTime } from './scalars/date-time.scalar.js';

const schema = buildSchema(`
  directive @cost(complexity: Int!) on FIELD_DEFINITION
  type Query {
    me: User
    users(first: Int, last: Int): UserConnection!
    admins: [User!]
    search(first: Int): [User!]! @cost(complexity: 10)
  }
  type UserConnection { edges: [UserEdge!]! nodes: [User!]! totalCount: Int! }
  type UserEdge { cursor: String! node: User! }
  type User { id: ID! name: String! tags: [String!]! friends(first: Int): [User!]! }
`);

const cost = (query: string, variables?: Record<string, unknown>) =>
  operationCost(schema, parse(query), variables, undefined);

describe('operationCost (DESIGN.md section 9)', () => {
  it('charges 1 per object field and nothing for scalars (scalar lists included)', () => {
    expect(cost('{ me { id name tags } }')).toBe(1);
    expect(cost('{ __typename }')).toBe(0);
  });

  it('multiplies by first/last, 20 by default, without charging edges/nodes twice', () => {
    expect(cost('{ users(first: 10) { nodes { id } } }')).toBe(1 + 10 * 1);
    expect(cost('{ users(last: 3) { edges { node { id } } } }')).toBe(1 + 3 * (1 + 1));
    expect(cost('{ users { totalCount } }')).toBe(1);
    expect(cost('{ admins { id } }')).toBe(1 + 20 * 0);
    expect(cost('{ admins { friends(first: 2) { id } } }')).toBe(1 + 20 * (1 + 2 * 0));
  });

  it('lets @cost replace the own cost and reads first from variables', () => {
    expect(cost('{ search(first: 5) { id } }')).toBe(10);
    expect(
      cost('query($n: Int) { users(first: $n) { nodes { friends(first: $n) { id } } } }', { n: 4 }),
    ).toBe(1 + 4 * (1 + (1 + 4 * 0)));
  });

  it('gives the same answer from its cache', () => {
    const doc = parse('query($n: Int) { users(first: $n) { nodes { id } } }');
    expect(operationCost(schema, doc, { n: 2 }, undefined)).toBe(3);
    expect(operationCost(schema, doc, { n: 7 }, undefined)).toBe(8);
    expect(operationCost(schema, doc, { n: 2 }, undefined)).toBe(3);
  });

  it('leaves introspection free', () => {
    expect(cost('{ __schema { types { name fields { name } } } }')).toBe(0);
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
