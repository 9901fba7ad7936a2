import { readFileSync } from 'node:fs';
import { buildSchema, parse } from 'graphql';
import { describe, expect, it } from 'vitest';
import type { Caller } from '../caller.js';
import { Role } from '../role.js';
import { checkScopes, graphqlRequirement, restRequirement } from './oauth-scope.policy.js';

const schema = buildSchema(readFileSync('schema.graphql', 'utf8'), { assumeValidSDL: true });
const gql = (q: string, variables?: Record<string, unknown>) =>
  graphqlRequirement(schema, parse(q), undefined, variables);

const oauth = (scopes: string[]): Caller => ({
  userId: 'usr_x',
  role: Role.USER,
  method: 'oauth',
  clientId: 'cli_x',
  scopes,
});

describe('REST scope requirements', () => {
  it.each([
    ['GET', '/api/v1/users', ['users:read']],
    ['HEAD', '/api/v1/users/:id', ['users:read']],
    ['POST', '/api/v1/users/batch', ['users:write']],
    ['PATCH', '/api/v1/users/:id', ['users:write']],
    ['GET', '/api/v1/users/:id/orders', ['orders:read']],
    ['POST', '/api/v1/users/:id/orders', ['orders:write']],
    ['PATCH', '/api/v1/orders/:id', ['orders:write']],
    ['GET', '/api/v1/posts/:id', ['posts:read']],
    ['DELETE', '/api/v1/posts/:id', ['posts:write']],
    ['GET', '/api/v1/rooms/:id/messages', ['messages:read']],
    ['POST', '/api/v1/rooms/:id/messages', ['messages:write']],
    ['GET', '/api/v1/auth/me', []],
  ])('%s %s needs %j', (method, route, scopes) => {
    expect(restRequirement(method, route)).toEqual({ scopes });
  });

  it.each([
    ['POST', '/api/v1/api-keys'],
    ['GET', '/api/v1/oauth/clients'],
    ['DELETE', '/api/v1/oauth/grants/:client_id'],
    ['GET', '/api/v1/something-new'],
  ])('%s %s is not available to OAuth tokens', (method, route) => {
    expect(restRequirement(method, route).unavailable).toBeTruthy();
  });
});

describe('GraphQL scope requirements', () => {
  it('needs the read scope of each type an operation selects', () => {
    expect(gql('{ users(first: 2) { nodes { id name } } }').scopes).toEqual(['users:read']);
    expect(new Set(gql('{ user(id: "usr_1") { id orders { nodes { id } } } }').scopes)).toEqual(
      new Set(['users:read', 'orders:read']),
    );
    expect(new Set(gql('{ search(term: "a") { __typename } }').scopes)).toEqual(
      new Set(['users:read', 'posts:read']),
    );
    expect(gql('{ __schema { types { name } } }').scopes).toEqual([]);
  });

  it('needs the write scope of a mutation (plus the read scope of what it returns)', () => {
    const r = gql('mutation { createPost(input: { title: "t", body: "b" }) { id } }');
    expect(new Set(r.scopes)).toEqual(new Set(['posts:write', 'posts:read']));
  });

  it('needs the read scope of the id kind for node(id:)', () => {
    expect(
      gql('query ($id: ID!) { node(id: $id) { id } }', { id: 'pst_01J0000000000000000000000A' })
        .scopes,
    ).toEqual(['posts:read']);
  });

  it('needs messages:read for a message subscription', () => {
    expect(gql('subscription { newMessage { id content } }').scopes).toEqual(['messages:read']);
  });
});

describe('checkScopes', () => {
  it('lets first-party callers through whatever the requirement', () => {
    const firstParty: Caller = { userId: 'usr_x', role: Role.USER, method: 'jwt' };
    expect(checkScopes(firstParty, { scopes: ['users:write'] })).toEqual({ allowed: true });
    expect(checkScopes(firstParty, { scopes: [], unavailable: 'x' })).toEqual({ allowed: true });
  });

  it('reports the missing scopes of an OAuth token; a write scope implies its read scope', () => {
    expect(checkScopes(oauth(['users:read']), { scopes: ['users:read'] })).toEqual({
      allowed: true,
    });
    expect(checkScopes(oauth(['posts:write']), { scopes: ['posts:read'] })).toEqual({
      allowed: true,
    });
    expect(checkScopes(oauth(['users:read']), { scopes: ['users:read', 'orders:read'] })).toEqual({
      allowed: false,
      missing: ['orders:read'],
    });
    expect(checkScopes(oauth(['users:read']), { scopes: ['users:write'] })).toEqual({
      allowed: false,
      missing: ['users:write'],
    });
  });

  it('refuses an unavailable requirement to OAuth tokens whatever their scopes', () => {
    expect(
      checkScopes(oauth(['users:write']), { scopes: [], unavailable: 'POST /api/v1/api-keys' }),
    ).toMatchObject({ allowed: false, unavailable: 'POST /api/v1/api-keys' });
  });
});
