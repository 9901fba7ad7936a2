import { GraphQLSchemaHost } from '@nestjs/graphql';
import {
  __Schema,
  getIntrospectionQuery,
  parse,
  type GraphQLFieldResolver,
  type IntrospectionOptions,
} from 'graphql';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { cachedIntrospectionCost, operationCost } from '../src/graphql/cost.js';
import { codes, gql } from './graphql-client.js';
import { ADMIN_EMAIL, ADMIN_PASSWORD, startApp, type TestApp } from './helpers/app.js';
import { tokenFor } from './helpers/factories.js';
import { connect, type Socket } from './subscriptions-helpers.js';

/** What Apollo Studio / Sandbox and GraphiQL send, with and without each option. */
const OPTION_SETS: IntrospectionOptions[] = [
  {},
  { descriptions: false },
  {
    descriptions: true,
    specifiedByUrl: true,
    directiveIsRepeatable: true,
    schemaDescription: true,
    inputValueDeprecation: true,
  },
  { descriptions: false, inputValueDeprecation: true, directiveIsRepeatable: true },
];

const FULL_TYPE = `types { name kind description
  fields(includeDeprecated: true) { name args { name type { name ofType { name ofType { name } } } }
    type { name kind ofType { name kind ofType { name kind ofType { name kind } } } } }
  inputFields { name type { name ofType { name } } } enumValues { name } possibleTypes { name } }`;

/** `n` copies of the schema's types under aliases: a hostile introspection document. */
function aliased(n: number): string {
  return `{ ${Array.from({ length: n }, (_, i) => `s${i}: __schema { ${FULL_TYPE} }`).join(' ')} }`;
}

/** Counts how often introspection actually runs: `__schema { types }` resolved by graphql-js. */
function countTypesResolved() {
  const field = __Schema.getFields().types;
  const original = field.resolve as GraphQLFieldResolver<unknown, unknown>;
  const counter = { calls: 0, restore: () => (field.resolve = original) };
  field.resolve = (...args) => {
    counter.calls += 1;
    return original(...args);
  };
  return counter;
}

/** One operation over a graphql-ws client: its result, or the errors of an `error` message. */
function wsRun(
  socket: Socket,
  query: string,
): Promise<{ data?: any; errors?: any[]; extensions?: any }> {
  return new Promise((resolve) => {
    let result: { data?: any; errors?: any[] } = {};
    socket.client.subscribe(
      { query },
      {
        next: (value) => (result = value as typeof result),
        error: (errors) => resolve({ errors: errors as any[] }),
        complete: () => resolve(result),
      },
    );
  });
}

const BUDGET = 1000;

describe('introspection over HTTP: charged like any query, answered from a cache', () => {
  let t: TestApp;
  let costOf: (query: string) => number;
  let counter: ReturnType<typeof countTypesResolved> | undefined;

  beforeAll(async () => {
    t = await startApp();
    const schema = t.app.get(GraphQLSchemaHost).schema;
    costOf = (query) => operationCost(schema, parse(query), undefined, undefined);
  });
  afterEach(() => {
    counter?.restore();
  });
  afterAll(async () => {
    await t.close();
  });

  it('keeps the standard introspection query (every option set) within the cost limit, executed once, repetitions charged as cached', async () => {
    const admin = { bearer: await tokenFor(t.url, ADMIN_EMAIL, ADMIN_PASSWORD) };
    counter = countTypesResolved();
    for (const options of OPTION_SETS) {
      const query = getIntrospectionQuery(options);
      const cost = costOf(query);
      expect(cost, JSON.stringify(options)).toBeGreaterThan(100);
      expect(cost, JSON.stringify(options)).toBeLessThan(500);
      const first = await gql(t.url, query, { auth: admin });
      const again = await gql(t.url, query, { auth: admin });
      for (const res of [first, again]) {
        expect(res.status).toBe(200);
        expect(res.body.errors).toBeUndefined();
        expect(res.body.data.__schema.types.length).toBeGreaterThan(30);
      }
      // executed: its full cost; answered from memory: the cached share of it
      expect(first.body.extensions?.cost).toMatchObject({ requested: cost, limit: 1000 });
      expect(again.body.extensions?.cost).toMatchObject({
        requested: cachedIntrospectionCost(cost),
        limit: 1000,
      });
      expect(again.body.data).toEqual(first.body.data);
      const anonymous = await gql(t.url, query);
      expect(anonymous.status).toBe(200);
      expect(anonymous.body.data).toEqual(first.body.data);
    }
    // four documents, each executed once; the repetitions came from the cache
    expect(counter.calls).toBe(OPTION_SETS.length);
  });

  it('refuses aliased copies of __schema past the limit with QUERY_TOO_COMPLEX, without running them', async () => {
    const admin = { bearer: await tokenFor(t.url, ADMIN_EMAIL, ADMIN_PASSWORD) };
    const one = costOf(aliased(1));
    expect(one).toBeGreaterThan(10);
    // proportional: n copies cost n times one copy (rounding aside)
    expect(costOf(aliased(8))).toBeGreaterThanOrEqual(8 * one - 8);
    const n = Math.ceil(1001 / one) + 1;
    counter = countTypesResolved();
    const res = await gql(t.url, aliased(n), { auth: admin });
    expect(codes(res.body)).toEqual(['QUERY_TOO_COMPLEX']);
    expect(res.body.errors![0].extensions!.cost).toEqual({
      requested: costOf(aliased(n)),
      limit: 1000,
    });
    // deep ofType chains are counted too
    const deep = `{ __schema { types { fields { type { name kind ${'ofType { name kind '.repeat(7)}${'} '.repeat(7)} } } } } }`;
    const shallow = '{ __schema { types { fields { type { name kind } } } } }';
    expect(costOf(deep)).toBeGreaterThan(costOf(shallow));
    expect(counter.calls).toBe(0);
  });
});

describe('introspection by anonymous callers: charged by address', () => {
  let t: TestApp;
  let costOf: (query: string) => number;
  const sockets: Socket[] = [];

  beforeAll(async () => {
    // a small budget per identity, so that charging anonymous introspection shows at once
    t = await startApp({ GRAPHQL_COST_BUDGET: String(BUDGET), GRAPHQL_COST_WINDOW_S: '600' });
    const schema = t.app.get(GraphQLSchemaHost).schema;
    costOf = (query) => operationCost(schema, parse(query), undefined, undefined);
  });
  afterAll(async () => {
    await Promise.all(sockets.map((s) => s.dispose()));
    await t.close();
  });

  it("spends the address's budget with standard introspection over HTTP, then 429 (WebSocket too)", async () => {
    const query = getIntrospectionQuery({ descriptions: true, inputValueDeprecation: true });
    // the first answer is executed (full cost), the next ones come from memory (a share of it)
    const costs = [costOf(query), cachedIntrospectionCost(costOf(query))];
    let remaining = BUDGET;
    for (let i = 0; remaining >= costs[i === 0 ? 0 : 1]; i++) {
      const res = await gql(t.url, query);
      remaining -= costs[i === 0 ? 0 : 1];
      expect(res.status, JSON.stringify(res.body.errors)).toBe(200);
      expect(res.body.extensions?.cost).toMatchObject({
        requested: costs[i === 0 ? 0 : 1],
        budget: BUDGET,
        remaining,
      });
    }
    const refused = await gql(t.url, query);
    expect(refused.status).toBe(429);
    expect(codes(refused.body)).toEqual(['RATE_LIMITED']);
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(refused.body.data).toBeUndefined();
    // over WebSocket the same address has the same budget: refused as well
    const socket = await connect(t.url, undefined);
    sockets.push(socket);
    const ws = await wsRun(socket, query);
    expect(ws.errors?.map((e) => e.extensions?.code)).toEqual(['RATE_LIMITED']);
  });
});

describe('introspection over WebSocket', () => {
  let t: TestApp;
  let costOf: (query: string) => number;
  const sockets: Socket[] = [];

  beforeAll(async () => {
    t = await startApp({ GRAPHQL_COST_BUDGET: String(BUDGET), GRAPHQL_COST_WINDOW_S: '600' });
    const schema = t.app.get(GraphQLSchemaHost).schema;
    costOf = (query) => operationCost(schema, parse(query), undefined, undefined);
  });
  afterAll(async () => {
    await Promise.all(sockets.map((s) => s.dispose()));
    await t.close();
  });

  it('answers anonymous standard introspection from the cache, charged by address, then RATE_LIMITED', async () => {
    const counter = countTypesResolved();
    try {
      const query = getIntrospectionQuery({ descriptions: true, directiveIsRepeatable: true });
      const cost = costOf(query);
      const socket = await connect(t.url, undefined);
      sockets.push(socket);
      // the first one executed (full cost), the others from memory (cached share)
      const allowed = 1 + Math.floor((BUDGET - cost) / cachedIntrospectionCost(cost));
      const answers: { __schema: { types: unknown[] } }[] = [];
      for (let i = 0; i < allowed; i++) {
        const res = await wsRun(socket, query);
        expect(res.errors, JSON.stringify(res.errors)).toBeUndefined();
        answers.push(res.data);
      }
      expect(answers[0].__schema.types.length).toBeGreaterThan(30);
      answers.forEach((a) => expect(a).toEqual(answers[0]));
      expect(counter.calls).toBe(1);
      // the budget of this address is spent: a second socket and HTTP are refused too
      const other = await connect(t.url, undefined);
      sockets.push(other);
      const refused = await wsRun(other, query);
      expect(refused.errors?.map((e) => e.extensions?.code)).toEqual(['RATE_LIMITED']);
      const http = await gql(t.url, query);
      expect(http.status).toBe(429);
      expect(counter.calls).toBe(1);
    } finally {
      counter.restore();
    }
  });

  it('refuses aliased copies of __schema over the limit with QUERY_TOO_COMPLEX', async () => {
    const counter = countTypesResolved();
    try {
      const admin = await tokenFor(t.url, ADMIN_EMAIL, ADMIN_PASSWORD);
      const socket = await connect(t.url, { bearer: admin });
      sockets.push(socket);
      const n = Math.ceil(1001 / costOf(aliased(1))) + 1;
      const res = await wsRun(socket, aliased(n));
      expect(res.errors?.map((e) => e.extensions?.code)).toEqual(['QUERY_TOO_COMPLEX']);
      expect(res.errors?.[0].extensions.cost).toEqual({
        requested: costOf(aliased(n)),
        limit: 1000,
      });
      expect(counter.calls).toBe(0);
    } finally {
      counter.restore();
    }
  });
});
