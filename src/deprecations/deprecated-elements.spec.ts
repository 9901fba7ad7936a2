import { buildSchema, parse } from 'graphql';
import { describe, expect, it } from 'vitest';
import { deprecatedUses, schemaDeprecations } from './deprecated-elements.js';

const schema = buildSchema(`
  enum Sort { NEW OLD @deprecated(reason: "Use NEW.") }
  input Filter { q: String, text: String @deprecated(reason: "Use q.") }
  type Post { id: ID! body: String content: String @deprecated(reason: "Use body.") }
  type Query {
    posts(sort: Sort, filter: Filter, limit: Int @deprecated(reason: "Use first."), first: Int): [Post]
  }
`);

describe('deprecated elements of a schema and of an operation', () => {
  it('lists the deprecated field, argument, input field and enum value with their reasons', () => {
    expect(schemaDeprecations(schema).elements).toEqual([
      { coordinate: 'Filter.text', kind: 'input_field', reason: 'Use q.' },
      { coordinate: 'Post.content', kind: 'field', reason: 'Use body.' },
      { coordinate: 'Query.posts(limit:)', kind: 'argument', reason: 'Use first.' },
      { coordinate: 'Sort.OLD', kind: 'enum_value', reason: 'Use NEW.' },
    ]);
  });

  it('finds each use with its response path, through aliases and fragments, in the chosen operation only', () => {
    const doc = parse(`
      query A { list: posts(limit: 1, sort: OLD, filter: { text: "x" }) { ...P } }
      query B { posts { id } }
      fragment P on Post { id old: content }
    `);
    expect(deprecatedUses(schema, doc, 'A')).toEqual([
      { coordinate: 'Query.posts(limit:)', reason: 'Use first.', path: ['list'] },
      { coordinate: 'Sort.OLD', reason: 'Use NEW.', path: ['list'] },
      { coordinate: 'Filter.text', reason: 'Use q.', path: ['list'] },
      { coordinate: 'Post.content', reason: 'Use body.', path: ['list', 'old'] },
    ]);
    expect(deprecatedUses(schema, doc, 'B')).toEqual([]);
  });

  it('does not walk a document that mentions no deprecated name: the same empty answer, cached per document', () => {
    const doc = parse('{ posts(first: 2, sort: NEW) { id body } }');
    const first = deprecatedUses(schema, doc, undefined);
    expect(first).toEqual([]);
    expect(deprecatedUses(schema, doc, undefined)).toBe(first);
    expect(deprecatedUses(schema, parse('{ posts { id } }'), undefined)).toBe(first);
  });
});
