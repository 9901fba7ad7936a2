import { mkdtempSync, rmSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { AbstractGraphQLDriver, GraphQLSchemaHost } from '@nestjs/graphql';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CompiledApolloDriver } from '../src/graphql/execution/compiled-driver.js';
import { freshDatabaseUrl, startApp, usingPostgres, type TestApp } from './helpers/app.js';
import { assertProperty, buildWorld, fuzzSettings, send, type World } from './helpers/fuzz.js';
import { graphqlCaseArb, graphqlRequest, graphqlTargets } from './helpers/fuzz-graphql.js';

// The differential test of compiled execution (src/graphql/execution/, docs/performance.md): two
// instances of the app on one database, one running operations through graphql-jit
// (GRAPHQL_COMPILED_EXECUTION=true), the other through graphql-js, get the same requests; every
// answer must be the same: status, data, errors (messages, codes, paths, locations, details) and
// extensions. The operations are those the GraphQL e2e suites send (successes, domain errors, nulls
// in lists, variables that do not coerce, fragments, aliases, directives) and a fuzzed set of
// queries (test/helpers/fuzz-graphql.ts). Mutations are sent only where they are refused (a refused
// operation changes nothing, so both instances see the same database).

const settings = fuzzSettings();
const CI_RUNS = 200;

let dir: string | undefined;
let compiled: TestApp;
let plain: TestApp;
let world: World;
const ids: Record<string, string> = {};

beforeAll(async () => {
  dir = usingPostgres ? undefined : mkdtempSync(join(tmpdir(), 'atrium-compiled-'));
  const shared = {
    DATABASE_URL: dir ? `sqlite:${join(dir, 'shared.sqlite')}` : freshDatabaseUrl(),
    REDIS_PREFIX: `atrium-test:${randomBytes(4).toString('hex')}:`,
  };
  compiled = await startApp({ ...shared, GRAPHQL_COMPILED_EXECUTION: 'true' });
  plain = await startApp({ ...shared, GRAPHQL_COMPILED_EXECUTION: 'false' });
  world = await buildWorld(compiled);
  // the world's resources (made through the compiled instance): a post, orders, a room and a message
  for (const kind of ['pst', 'ord', 'rom']) {
    const id = world.pick(0, kind);
    expect(id, kind).toBeDefined();
    ids[kind] = id as string;
  }
  const me = await gql(compiled, 'admin', '{ me { id } }');
  ids.admin = (me.json as { data: { me: { id: string } } }).data.me.id;
}, 120_000);

afterAll(async () => {
  await compiled?.close();
  await plain?.close();
  if (dir) {
    rmSync(dir, { recursive: true, force: true });
  }
});

/**
 * An answer without the cost budget's state at the moment it was asked (`extensions.cost.remaining`
 * and `resetAt`: the two instances count spending each on its own, or one after the other in Redis);
 * every other member is compared.
 */
function comparable(json: unknown): unknown {
  const strip = (one: unknown) => {
    const cost = (one as { extensions?: { cost?: Record<string, unknown> } } | undefined)
      ?.extensions?.cost;
    if (cost) {
      delete cost.remaining;
      delete cost.resetAt;
    }
    return one;
  };
  return Array.isArray(json) ? json.map(strip) : strip(json);
}

async function gql(
  t: TestApp,
  caller: string,
  query: string,
  variables?: unknown,
  operationName?: string,
): Promise<{ status: number; json: unknown }> {
  const res = await fetch(`${t.url}/graphql`, {
    method: 'POST',
    headers: { ...world.callers[caller], 'content-type': 'application/json' },
    body: JSON.stringify({ query, variables, operationName }),
  });
  return { status: res.status, json: comparable(await res.json()) };
}

/** The operations of the GraphQL e2e suites, by caller; `$ids` are filled in before sending. */
function operations(): { caller: string; query: string; variables?: unknown; name?: string }[] {
  const unknownUser = 'usr_00000000000000000000000000';
  return [
    { caller: 'admin', query: '{ me { id name email role createdAt updatedAt } }' },
    {
      caller: 'user',
      query: '{ me { id name role posts(first: 5) { totalCount nodes { id } } } }',
    },
    { caller: 'guest', query: '{ me { id role } }' },
    { caller: 'anonymous', query: '{ me { id } }' },
    {
      caller: 'admin',
      query: 'query($id: ID!) { user(id: $id) { id name email role createdAt } }',
      variables: { id: ids.admin },
    },
    {
      caller: 'admin',
      query: 'query($id: ID!) { user(id: $id) { id name } }',
      variables: { id: unknownUser },
    },
    {
      caller: 'admin',
      query: 'query($id: ID!) { user(id: $id) { id } }',
      variables: { id: 'nope' },
    },
    { caller: 'admin', query: 'query($id: ID!) { user(id: $id) { id } }', variables: { id: 42 } },
    { caller: 'admin', query: 'query($id: ID!) { user(id: $id) { id } }', variables: {} },
    {
      caller: 'admin',
      query:
        '{ users(first: 20) { nodes { id name posts(first: 5) { totalCount nodes { id title } } } } }',
    },
    {
      caller: 'user',
      query:
        '{ users(first: 3) { totalCount edges { cursor node { id name email } } pageInfo { hasNextPage endCursor } } }',
    },
    {
      caller: 'guest',
      query: '{ users(first: 2, orderBy: { field: NAME, direction: DESC }) { nodes { id } } }',
    },
    { caller: 'admin', query: '{ users(first: 1000) { nodes { id } } }' },
    { caller: 'admin', query: '{ users(last: 2) { nodes { id } pageInfo { hasPreviousPage } } }' },
    { caller: 'admin', query: '{ users(first: 2, after: "not-a-cursor") { nodes { id } } }' },
    { caller: 'admin', query: '{ users(role: ADMIN, first: 5) { nodes { id role } } }' },
    {
      caller: 'admin',
      query:
        'query($id: ID!) { node(id: $id) { __typename id ... on User { name } ... on Post { title } } }',
      variables: { id: ids.pst },
    },
    {
      caller: 'admin',
      query:
        'query($id: ID!) { node(id: $id) { __typename ... on Order { totalCents items { sku quantity } } } }',
      variables: { id: ids.ord },
    },
    {
      caller: 'guest',
      query: 'query($id: ID!) { node(id: $id) { __typename id } }',
      variables: { id: ids.ord },
    },
    {
      caller: 'admin',
      query: 'query($id: ID!) { post(id: $id) { id title body author { id name } createdAt } }',
      variables: { id: ids.pst },
    },
    {
      caller: 'admin',
      query: 'query($id: ID!) { post(id: $id) { id } }',
      variables: { id: 'pst_00000000000000000000000000' },
    },
    { caller: 'guest', query: '{ posts(first: 5) { id title author { name } } }' },
    {
      caller: 'admin',
      query: 'query($id: ID!) { order(id: $id) { id status currency totalCents user { id } } }',
      variables: { id: ids.ord },
    },
    {
      caller: 'user',
      query: 'query($id: ID!) { order(id: $id) { id } }',
      variables: { id: ids.ord },
    },
    { caller: 'guest', query: '{ orders(first: 5) { nodes { id } } }' },
    {
      caller: 'admin',
      query: '{ orders(first: 5) { totalCount nodes { id status user { name } } } }',
    },
    {
      caller: 'admin',
      query:
        'query($id: ID!) { room(id: $id) { id name messages(first: 5) { edges { cursor node { id content author { id } room { id } } } } } }',
      variables: { id: ids.rom },
    },
    { caller: 'guest', query: '{ rooms(first: 5) { nodes { id name } } }' },
    {
      caller: 'admin',
      query:
        '{ search(term: "fuzz", first: 5) { __typename ... on Post { id } ... on User { id } } }',
    },
    { caller: 'admin', query: '{ search(term: "", first: 5) { __typename } }' },
    { caller: 'admin', query: '{ admins { id } webhookEndpoints { id } }' },
    { caller: 'user', query: '{ admins { id } }' },
    {
      caller: 'admin',
      query:
        'query Named($skip: Boolean!, $n: Int) { a: me { id } b: me { name @skip(if: $skip) role @include(if: $skip) } ...F users(first: $n) { nodes { ...U } } } fragment F on Query { me { createdAt } } fragment U on User { id __typename }',
      variables: { skip: true, n: 2 },
      name: 'Named',
    },
    {
      caller: 'admin',
      query: 'query A { me { id } } query B { me { name } }',
      name: 'B',
    },
    { caller: 'admin', query: 'query A { me { id } } query B { me { name } }', name: 'C' },
    { caller: 'admin', query: 'query A { me { id } } query B { me { name } }' },
    { caller: 'admin', query: '{ __typename me { __typename } }' },
    { caller: 'admin', query: '{ __type(name: "User") { name fields { name } } }' },
    // mutations that are refused: nothing changes, both instances answer from the same database
    {
      caller: 'admin',
      query: 'mutation($id: ID!) { deleteUser(id: $id) }',
      variables: { id: unknownUser },
    },
    {
      caller: 'guest',
      query: 'mutation { createPost(input: { title: "x", body: "y" }) { id } }',
    },
    {
      caller: 'admin',
      query: 'mutation { createUser(input: { name: "", email: "not-an-email" }) { id } }',
    },
    {
      caller: 'admin',
      query: 'mutation($in: CreateUserInput!) { createUser(input: $in) { id } }',
      variables: { in: { name: 'x' } },
    },
  ];
}

describe('compiled execution (graphql-jit) against graphql-js', () => {
  it('answers every operation of the GraphQL suites as graphql-js does: data, errors, extensions', async () => {
    const driver = compiled.app.get<AbstractGraphQLDriver, CompiledApolloDriver>(
      AbstractGraphQLDriver,
      {
        strict: false,
      },
    );
    const runsBefore = driver.executor?.runs.compiled ?? 0;
    const outcomes = new Map<string, number>();
    for (const op of operations()) {
      const a = await gql(compiled, op.caller, op.query, op.variables, op.name);
      const b = await gql(plain, op.caller, op.query, op.variables, op.name);
      expect(a, `${op.caller}: ${op.query}`).toEqual(b);
      const errors = (a.json as { errors?: { extensions?: { code?: string } }[] }).errors;
      const outcome = `${a.status}:${errors?.[0]?.extensions?.code ?? 'data'}`;
      outcomes.set(outcome, (outcomes.get(outcome) ?? 0) + 1);
    }
    // the set covers answers with data and the contract's error codes
    expect([...outcomes.keys()]).toEqual(
      expect.arrayContaining([
        '200:data',
        '200:NOT_FOUND',
        '200:FORBIDDEN',
        '200:UNAUTHENTICATED',
        '200:BAD_USER_INPUT',
      ]),
    );
    // and most of it ran compiled (introspection and request errors go to graphql-js)
    expect(driver.executor).toBeDefined();
    expect((driver.executor?.runs.compiled ?? 0) - runsBefore).toBeGreaterThan(25);
    const other = plain.app.get<AbstractGraphQLDriver, CompiledApolloDriver>(
      AbstractGraphQLDriver,
      {
        strict: false,
      },
    );
    expect(other.executor).toBeUndefined();
  });

  it('answers fuzzed queries as graphql-js does', async () => {
    // queries only (a mutation that succeeds would change what the second instance reads); the
    // deprecation usage counts every use, by either instance, as it happens
    const targets = graphqlTargets(compiled.app.get(GraphQLSchemaHost).schema).filter(
      (x) => x.operation === 'query' && x.field.name !== 'deprecationUsage',
    );
    const seen = new Map<string, number>();
    const property = fc.asyncProperty(graphqlCaseArb(targets, world), async (c) => {
      fc.pre(c.transport !== 'raw' || !/mutation|subscription/i.test(c.raw ?? ''));
      fc.pre(!/\b(mutation|subscription)\b/.test(c.document));
      const req = graphqlRequest(c, world);
      const a = await send(compiled.url, req);
      const b = await send(plain.url, req);
      fc.pre(a !== undefined && b !== undefined);
      expect({ status: a.status, json: comparable(a.json) ?? a.text }).toEqual({
        status: b.status,
        json: comparable(b.json) ?? b.text,
      });
      const outcome = `${a.status}`;
      seen.set(outcome, (seen.get(outcome) ?? 0) + 1);
    });
    const runs = await assertProperty(
      'GraphQL compiled vs graphql-js',
      property,
      settings,
      CI_RUNS,
    );
    console.log(
      `differential fuzz: ${runs} runs, statuses ${JSON.stringify(Object.fromEntries(seen))}`,
    );
    expect(seen.get('200') ?? 0).toBeGreaterThan(0);
  }, 120_000);
});
