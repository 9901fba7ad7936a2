import { getIntrospectionQuery, GraphQLError } from 'graphql';
import { describe, expect, it } from 'vitest';
import { DOCUMENT_LIMITS, parseBounded } from './document-limits.js';
import { variablesViolation } from './request-limits.js';

const rep = (n: number, f: (i: number) => string) =>
  Array.from({ length: n }, (_, i) => f(i)).join(' ');

function refusal(query: string): string | undefined {
  const result = parseBounded(query);
  return result instanceof GraphQLError ? result.message : undefined;
}

describe('document limits (before validation)', () => {
  it('accepts the full introspection query and ordinary documents with fragments', () => {
    expect(refusal(getIntrospectionQuery())).toBeUndefined();
    expect(
      refusal(
        `{ ${rep(30, (i) => `u${i}: user(id: "x") { ...A ...B }`)} } fragment A on User { id name } fragment B on User { id role }`,
      ),
    ).toBeUndefined();
  });

  it('bounds tokens, fields (fragments counted at every spread) and aliases', () => {
    expect(refusal(`{ ${rep(DOCUMENT_LIMITS.maxTokens, () => 'a')} }`)).toMatch(/tokens/);
    expect(refusal(`{ ${rep(1501, (i) => `f${i}`)} }`)).toMatch(/too many fields/);
    // 2^20 expansions of a 40-token document: counted without expanding
    const doubling = rep(20, (i) => `fragment F${i} on User { ...F${i + 1} ...F${i + 1} }`);
    expect(refusal(`{ me { ...F0 } } ${doubling} fragment F20 on User { id }`)).toMatch(
      /too many fields/,
    );
    expect(refusal(`{ ${rep(201, (i) => `a${i}: id`)} }`)).toMatch(/too many aliases/);
    expect(refusal(`{ ${rep(200, (i) => `a${i}: id`)} }`)).toBeUndefined();
  });

  it('bounds the same-name field pairs validation compares, through fragments and nesting', () => {
    expect(refusal(`{ ${rep(1500 / 3, () => 'me { id }')} }`)).toMatch(/share a response name/);
    expect(
      refusal(
        `{ me { ${rep(60, (i) => `...F${i}`)} } } ${rep(60, (i) => `fragment F${i} on User { posts { totalCount } }`)}`,
      ),
    ).toMatch(/share a response name/);
    // 10 x 10 nested pairs: 45 + 45 x 100 comparisons
    expect(refusal(`{ ${rep(10, () => `me { ${rep(10, () => 'id')} }`)} }`)).toMatch(
      /share a response name/,
    );
    expect(refusal(`{ ${rep(10, () => 'me { id }')} }`)).toBeUndefined();
  });

  it('bounds arguments, directives, definitions and variables; a repeated argument is one error', () => {
    expect(refusal(`{ f(${rep(21, (i) => `a${i}: 1`)}) }`)).toMatch(/arguments on one field/);
    expect(refusal(`{ f ${rep(11, () => '@include(if: true)')} }`)).toMatch(/directives/);
    expect(refusal(rep(101, (i) => `query Q${i} { a }`))).toMatch(/definitions/);
    expect(refusal(`query(${rep(101, (i) => `$v${i}: Int`)}) { a }`)).toMatch(/variables/);
    expect(refusal('{ f(a: 1, a: 2) }')).toBe('There can be only one argument named "a".');
  });

  it('leaves syntax errors to the parser message', () => {
    expect(refusal('{ me { id }')).toMatch(/^Syntax Error/);
  });
});

describe('variablesViolation', () => {
  it('bounds depth (the variables object is level 1) and entries, without recursion', () => {
    let deep: unknown = 1;
    for (let i = 0; i < 100_000; i++) {
      deep = [deep];
    }
    expect(variablesViolation({ a: deep })).toMatch(/deeper than 32/);
    let ok: unknown = 1;
    for (let i = 0; i < 31; i++) {
      ok = [ok];
    }
    expect(variablesViolation({ a: ok })).toBeUndefined();
    expect(variablesViolation({ a: new Array(10_000).fill(0) })).toMatch(/10000 entries/);
    expect(variablesViolation({ a: new Array(9_999).fill(0) })).toBeUndefined();
    expect(variablesViolation(undefined)).toBeUndefined();
  });
});
