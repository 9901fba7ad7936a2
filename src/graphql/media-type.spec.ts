import { describe, expect, it } from 'vitest';
import { acceptsGraphqlResult, prefersHtml, wantsGraphqlResponseJson } from './media-type.js';

// The answers are remembered per Accept value, at most 256 kept (all forgotten when full): each
// value keeps its own answer, before and after the memory is emptied.
describe('media-type negotiation, remembered per Accept value', () => {
  const cases: [string, { gql: boolean; accepts: boolean; html: boolean }][] = [
    ['application/json', { gql: false, accepts: true, html: false }],
    ['application/graphql-response+json', { gql: true, accepts: true, html: false }],
    [
      'application/graphql-response+json;q=0.5, application/json',
      { gql: false, accepts: true, html: false },
    ],
    ['text/html', { gql: false, accepts: false, html: true }],
    ['image/png', { gql: false, accepts: false, html: false }],
  ];

  it('answers each value as negotiated, across more distinct values than are kept', () => {
    for (let round = 0; round < 3; round++) {
      for (const [accept, want] of cases) {
        expect(wantsGraphqlResponseJson(accept), accept).toBe(want.gql);
        expect(acceptsGraphqlResult(accept), accept).toBe(want.accepts);
        expect(prefersHtml(accept), accept).toBe(want.html);
      }
      // 300 more distinct values: the memory fills and is emptied between rounds
      for (let i = 0; i < 300; i++) {
        expect(acceptsGraphqlResult(`application/x-${round}-${i}`)).toBe(false);
        expect(acceptsGraphqlResult(`application/x-${round}-${i}, application/json`)).toBe(true);
      }
    }
  });

  it('treats an absent Accept as application/json', () => {
    expect(wantsGraphqlResponseJson(undefined)).toBe(false);
    expect(acceptsGraphqlResult(undefined)).toBe(true);
    expect(prefersHtml(undefined)).toBe(false);
  });
});
