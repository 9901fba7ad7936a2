import { buildSchema, graphql } from 'graphql';
import { describe, expect, it } from 'vitest';
import { PlainResolvers } from './plain-resolvers.js';

const SDL = `
  input Filter { name: String }
  enum Field { NAME, AGE }
  enum Direction { ASC, DESC }
  input Order { field: Field!, direction: Direction = ASC }
  type Query {
    echo(text: String, times: Int): String
    filtered(filter: Filter): String
    ordered(orderBy: Order): String
  }
`;

describe('PlainResolvers', () => {
  it('calls a registered resolver as graphql-js does, after the text check of its string arguments', async () => {
    const plain = new PlainResolvers();
    plain.register('Query', 'echo', (_root, args) => String(args.text).repeat(Number(args.times)));
    const schema = plain.apply(buildSchema(SDL));
    const ok = await graphql({ schema, source: '{ echo(text: "ab", times: 2) }' });
    expect(ok).toEqual({ data: { echo: 'abab' } });
    const bad = await graphql({
      schema,
      source: 'query($t: String) { echo(text: $t, times: 1) }',
      variableValues: { t: 'a\u0000b' },
    });
    expect(bad.data).toEqual({ echo: null });
    expect(bad.errors?.[0]?.originalError).toMatchObject({
      details: [{ field: 'text', message: 'text must not contain NUL (U+0000) characters' }],
    });
  });

  it('takes an input object of enums only: GraphQL coerces it whole', async () => {
    const plain = new PlainResolvers();
    plain.register('Query', 'ordered', (_root, args) => JSON.stringify(args.orderBy));
    const schema = plain.apply(buildSchema(SDL));
    const ok = await graphql({ schema, source: '{ ordered(orderBy: { field: AGE }) }' });
    expect(ok).toEqual({ data: { ordered: '{"field":"AGE","direction":"ASC"}' } });
    const bad = await graphql({ schema, source: '{ ordered(orderBy: { field: "AGE" }) }' });
    expect(bad.errors?.[0]?.message).toMatch(/Enum "Field" cannot represent non-enum value/);
  });

  it('fails at boot for an unknown field or one taking an input object with other fields', () => {
    const unknown = new PlainResolvers();
    unknown.register('Query', 'nothing', () => null);
    expect(() => unknown.apply(buildSchema(SDL))).toThrow('no field Query.nothing');
    const input = new PlainResolvers();
    input.register('Query', 'filtered', () => null);
    expect(() => input.apply(buildSchema(SDL))).toThrow('takes an input object (filter)');
  });
});
