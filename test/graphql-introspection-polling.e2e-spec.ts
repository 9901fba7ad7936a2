import { GraphQLSchemaHost } from '@nestjs/graphql';
import { getIntrospectionQuery, parse } from 'graphql';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cachedIntrospectionCost, operationCost } from '../src/graphql/cost.js';
import { codes, gql } from './graphql-client.js';
import { startApp, type TestApp } from './helpers/app.js';

/** What Apollo Sandbox sends when it polls the schema (every option of getIntrospectionQuery). */
const SANDBOX_QUERY = getIntrospectionQuery({
  descriptions: true,
  specifiedByUrl: true,
  directiveIsRepeatable: true,
  schemaDescription: true,
  inputValueDeprecation: true,
});

describe('introspection polling at the default limits', () => {
  let t: TestApp;
  let costOf: (query: string) => number;

  beforeAll(async () => {
    // the configuration's defaults, not the test helper's generous ones
    t = await startApp({
      RATE_LIMIT: undefined,
      RATE_LIMIT_WINDOW_S: undefined,
      GRAPHQL_COST_BUDGET: undefined,
      GRAPHQL_COST_WINDOW_S: undefined,
    });
    const schema = t.app.get(GraphQLSchemaHost).schema;
    costOf = (query) => operationCost(schema, parse(query), undefined, undefined);
  });
  afterAll(async () => {
    await t.close();
  });

  it('lets a Sandbox-like client introspect 40 times in a minute: cached answers cost a fifteenth, the first one in full', async () => {
    const full = costOf(SANDBOX_QUERY);
    expect(full).toBeGreaterThan(400); // the figure docs/graphql.md states
    const cached = cachedIntrospectionCost(full);
    expect(cached).toBeLessThan(full / 10);
    const spent: number[] = [];
    for (let i = 0; i < 40; i++) {
      const res = await gql(t.url, SANDBOX_QUERY, { operationName: 'IntrospectionQuery' });
      expect(res.status, `poll ${i + 1}: ${JSON.stringify(res.body.errors)}`).toBe(200);
      expect(res.body.data.__schema.types.length).toBeGreaterThan(30);
      spent.push(Number(res.body.extensions?.cost?.requested));
      expect(res.body.extensions?.cost?.budget).toBe(10_000);
    }
    expect(spent[0]).toBe(full);
    expect(spent.slice(1)).toEqual(Array(39).fill(cached));
  });

  it('charges an introspection document not yet answered (another variant, other variables) in full', async () => {
    const variant = getIntrospectionQuery({ descriptions: false, inputValueDeprecation: true });
    const first = await gql(t.url, variant);
    expect(first.status).toBe(200);
    expect(first.body.extensions?.cost?.requested).toBe(costOf(variant));
    const again = await gql(t.url, variant);
    expect(again.body.extensions?.cost?.requested).toBe(cachedIntrospectionCost(costOf(variant)));

    const withVariable =
      'query Types($d: Boolean!) { __schema { types { name description @include(if: $d) fields { name args { name } } } } }';
    const full = operationCost(
      t.app.get(GraphQLSchemaHost).schema,
      parse(withVariable),
      { d: true },
      undefined,
    );
    expect(full).toBeGreaterThan(cachedIntrospectionCost(full));
    const yes = await gql(t.url, withVariable, { variables: { d: true } });
    expect(yes.body.extensions?.cost?.requested).toBe(full);
    const no = await gql(t.url, withVariable, { variables: { d: false } });
    expect(no.body.extensions?.cost?.requested).toBeGreaterThan(cachedIntrospectionCost(full));
    const yesAgain = await gql(t.url, withVariable, { variables: { d: true } });
    expect(yesAgain.body.extensions?.cost?.requested).toBe(cachedIntrospectionCost(full));
  });

  it('still refuses aliased copies of __schema by their full cost, cached or not', async () => {
    const body =
      '{ types { name kind fields { name args { name } type { name ofType { name } } } } }';
    const n = Math.ceil(1001 / costOf(`{ __schema ${body} }`)) + 1;
    const query = `{ ${Array.from({ length: n }, (_, i) => `s${i}: __schema ${body}`).join(' ')} }`;
    for (let i = 0; i < 2; i++) {
      const res = await gql(t.url, query);
      expect(codes(res.body)).toEqual(['QUERY_TOO_COMPLEX']);
    }
  });
});
