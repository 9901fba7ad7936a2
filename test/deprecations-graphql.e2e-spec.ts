import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createClient, type ExecutionResult } from 'graphql-ws';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { gql } from './graphql-client.js';
import {
  ADMIN_EMAIL,
  ADMIN_PASSWORD,
  freshDatabaseUrl,
  startApp,
  startPair,
  usingPostgres,
} from './helpers/app.js';
import { adminClient, createApiKey, createUser, tokenFor } from './helpers/factories.js';
import { client } from './helpers/http.js';
import { waitFor } from './helpers/wait.js';

const DEPRECATED = '{ posts(first: 1) { id content } }';
const PLAIN = '{ posts(first: 1) { id body } }';

type Usage = Record<string, number>;

/** `client -> count` for `element` (default `Post.content`) in the REST report. */
async function restUsage(base: string, bearer: string, element = 'Post.content'): Promise<Usage> {
  const res = await client(base, { bearer }).get('/api/v1/graphql/deprecations');
  expect(res.status, res.text).toBe(200);
  const entry = (
    res.body.data as { element: string; clients: { client: string; count: number }[] }[]
  ).find((e) => e.element === element);
  return Object.fromEntries((entry?.clients ?? []).map((c) => [c.client, c.count]));
}

/** `client -> count` for `element` (default `Post.content`) in `deprecationUsage`. */
async function graphqlUsage(
  base: string,
  bearer: string,
  element = 'Post.content',
): Promise<Usage> {
  const res = await gql(
    base,
    '{ deprecationUsage(since: "2026-01-01T00:00:00Z", first: 10) { element reason clients { client count lastUsedAt } } }',
    { auth: { bearer } },
  );
  expect(res.body.errors, JSON.stringify(res.body.errors)).toBeUndefined();
  const entry = (
    res.body.data.deprecationUsage as {
      element: string;
      clients: { client: string; count: number }[];
    }[]
  ).find((e) => e.element === element);
  return Object.fromEntries((entry?.clients ?? []).map((c) => [c.client, c.count]));
}

/** One operation over WebSocket (a real graphql-ws client) with `params` in connection_init: its answer. */
async function overWebSocket(
  base: string,
  params: Record<string, string>,
  query: string,
  variables?: Record<string, unknown>,
): Promise<ExecutionResult> {
  const ws = createClient({
    url: `${base.replace(/^http/, 'ws')}/graphql`,
    webSocketImpl: WebSocket,
    connectionParams: params,
    retryAttempts: 0,
  });
  try {
    const answers = ws.iterate({ query, variables });
    const first = await answers.next();
    return first.value as ExecutionResult;
  } finally {
    await ws.dispose();
  }
}

/**
 * Waits until each instance's REST report holds `expected` for `Post.content` (each instance writes
 * its counts in batches), then checks both reports hold exactly that. Only the clients named in
 * `expected` are compared: the file's other tests use the field on the same pair too.
 */
async function expectUsage(bases: string[], bearer: string, expected: Usage): Promise<void> {
  const ours = (usage: Usage): Usage =>
    Object.fromEntries(Object.keys(expected).map((k) => [k, usage[k] ?? 0]));
  for (const base of bases) {
    await waitFor(
      async () => JSON.stringify(ours(await restUsage(base, bearer))) === JSON.stringify(expected),
      { intervalMs: 200, what: 'the REST report to hold the expected counts' },
    );
    expect(ours(await restUsage(base, bearer))).toEqual(expected);
    expect(ours(await graphqlUsage(base, bearer))).toEqual(expected);
  }
}

/** Two API keys and a named client use `Post.content` 2, 1 and 1 times on `a` and `b`. */
async function useDeprecatedField(a: string, b: string) {
  const admin = await adminClient(a);
  const bearer = await tokenFor(a, ADMIN_EMAIL, ADMIN_PASSWORD);
  const one = await createApiKey(admin);
  const two = await createApiKey(admin);
  for (const [base, opts] of [
    [a, { auth: { apiKey: one.key } }],
    [b, { auth: { apiKey: one.key } }],
    [b, { auth: { apiKey: two.key } }],
    [
      a,
      {
        auth: { bearer },
        headers: {
          'apollographql-client-name': 'dashboard',
          'apollographql-client-version': '1.2',
        },
      },
    ],
  ] as const) {
    const res = await gql(base, DEPRECATED, opts);
    expect(res.body.errors).toBeUndefined();
  }
  const expected: Usage = {
    [`api_key:${one.id}`]: 2,
    [`api_key:${two.id}`]: 1,
    'name:dashboard@1.2': 1,
  };
  return { bearer, expected };
}

describe('GraphQL deprecations: usage per client', () => {
  let pair: Awaited<ReturnType<typeof startPair>>;

  beforeAll(async () => {
    pair = await startPair();
  });
  afterAll(() => pair.close());

  it('two API keys and a named client calling Post.content 2, 1 and 1 times appear with exactly those counts in the REST and GraphQL reports of both instances', async () => {
    const { bearer, expected } = await useDeprecatedField(pair.a.url, pair.b.url);
    await expectUsage([pair.a.url, pair.b.url], bearer, expected);
  });

  it('an answer that selected a deprecated field carries extensions.deprecations (path, element, reason); one that did not, none', async () => {
    const bearer = await tokenFor(pair.a.url, ADMIN_EMAIL, ADMIN_PASSWORD);
    await client(pair.a.url, { bearer }).post('/api/v1/posts', { title: 't', body: 'b' });
    const res = await gql(pair.a.url, '{ posts(first: 1) { id text: content } }', {
      auth: { bearer },
    });
    expect(res.body.errors).toBeUndefined();
    expect((res.body.extensions as Record<string, unknown>).deprecations).toEqual([
      { path: ['posts', 'text'], element: 'Post.content', reason: 'Use `body`.' },
    ]);
    const plain = await gql(pair.a.url, PLAIN, { auth: { bearer } });
    expect(
      (plain.body.extensions as Record<string, unknown> | undefined)?.deprecations,
    ).toBeUndefined();
  });

  it('operations over WebSocket are counted per client (API key; apollographql-client-name in connection_init) and their answers carry extensions.deprecations', async () => {
    const admin = await adminClient(pair.a.url);
    const bearer = await tokenFor(pair.a.url, ADMIN_EMAIL, ADMIN_PASSWORD);
    const key = await createApiKey(admin);
    const target = await createUser(pair.a.url);
    const rename = 'mutation ($id: ID!) { updateUser(id: $id, name: "Renamed") { id name } }';
    // a query on one instance and a mutation on the other, over the same API key
    const query = await overWebSocket(pair.a.url, { apiKey: key.key }, DEPRECATED);
    expect(query.errors).toBeUndefined();
    expect(query.extensions?.deprecations).toEqual([
      { path: ['posts', 'content'], element: 'Post.content', reason: 'Use `body`.' },
    ]);
    const mutation = await overWebSocket(pair.b.url, { apiKey: key.key }, rename, {
      id: target.id,
    });
    expect(mutation.errors).toBeUndefined();
    expect(mutation.data).toEqual({ updateUser: { id: target.id, name: 'Renamed' } });
    expect(mutation.extensions?.deprecations).toEqual([
      {
        path: ['updateUser'],
        element: 'Mutation.updateUser(name:)',
        reason: expect.stringContaining('Use `input: { name }`'),
      },
    ]);
    // a named client over a user's own token, twice; and an operation with nothing deprecated
    const named = {
      Authorization: `Bearer ${bearer}`,
      'apollographql-client-name': 'ws-dashboard',
      'apollographql-client-version': '3',
    };
    for (let i = 0; i < 2; i += 1) {
      expect((await overWebSocket(pair.b.url, named, DEPRECATED)).errors).toBeUndefined();
    }
    const plain = await overWebSocket(pair.b.url, named, PLAIN);
    expect(plain.extensions?.deprecations).toBeUndefined();
    const expected: Usage = { [`api_key:${key.id}`]: 1, 'name:ws-dashboard@3': 2 };
    await expectUsage([pair.a.url, pair.b.url], bearer, expected);
    for (const base of [pair.a.url, pair.b.url]) {
      expect(
        await restUsage(base, bearer, 'Mutation.updateUser(name:)').then(
          (u) => u[`api_key:${key.id}`],
        ),
      ).toBe(1);
    }
  });

  it('updateUser(name:) is deprecated in the schema with a reason that names its replacement, and input: { name } is not', async () => {
    const bearer = await tokenFor(pair.a.url, ADMIN_EMAIL, ADMIN_PASSWORD);
    const res = await gql(
      pair.a.url,
      '{ __type(name: "Mutation") { fields { name args(includeDeprecated: true) { name isDeprecated deprecationReason } } } }',
      { auth: { bearer } },
    );
    expect(res.body.errors).toBeUndefined();
    const update = (
      res.body.data.__type.fields as {
        name: string;
        args: { name: string; isDeprecated: boolean; deprecationReason: string | null }[];
      }[]
    ).find((f) => f.name === 'updateUser');
    expect(update?.args.find((a) => a.name === 'name')).toEqual({
      name: 'name',
      isDeprecated: true,
      deprecationReason: expect.stringContaining('Use `input: { name }`'),
    });
    expect(update?.args.find((a) => a.name === 'input')?.isDeprecated).toBe(false);
    const target = await createUser(pair.a.url);
    const viaInput = await gql(
      pair.a.url,
      'mutation ($id: ID!) { updateUser(id: $id, input: { name: "Via input" }) { name } }',
      { auth: { bearer }, variables: { id: target.id } },
    );
    expect(viaInput.body.errors).toBeUndefined();
    expect(viaInput.body.data.updateUser.name).toBe('Via input');
    expect(
      (viaInput.body.extensions as Record<string, unknown> | undefined)?.deprecations,
    ).toBeUndefined();
  });

  it('GET /api/v1/graphql/deprecations and deprecationUsage are ADMIN only', async () => {
    const admin = await adminClient(pair.a.url);
    const guest = await createApiKey(admin, { role: 'GUEST' });
    const rest = await client(pair.a.url, { apiKey: guest.key }).get(
      '/api/v1/graphql/deprecations',
    );
    expect(rest.status).toBe(403);
    const res = await gql(pair.a.url, '{ deprecationUsage(first: 1) { element } }', {
      auth: { apiKey: guest.key },
    });
    expect(res.body.errors?.[0]?.extensions?.code).toBe('FORBIDDEN');
  });
});

describe('GraphQL deprecations: counts survive a restart', () => {
  const dir = usingPostgres ? undefined : mkdtempSync(join(tmpdir(), 'atrium-deprecations-'));
  const url = dir ? `sqlite:${join(dir, 'db.sqlite')}` : freshDatabaseUrl();
  afterAll(() => {
    if (dir) {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('counts made just before a shutdown are in both reports after the restart', async () => {
    const first = await startApp({ DATABASE_URL: url });
    let counted: Awaited<ReturnType<typeof useDeprecatedField>>;
    try {
      counted = await useDeprecatedField(first.url, first.url);
    } finally {
      await first.close();
    }
    const second = await startApp({ DATABASE_URL: url });
    try {
      const bearer = await tokenFor(second.url, ADMIN_EMAIL, ADMIN_PASSWORD);
      expect(await restUsage(second.url, bearer)).toEqual(counted.expected);
      expect(await graphqlUsage(second.url, bearer)).toEqual(counted.expected);
    } finally {
      await second.close();
    }
  });
});
