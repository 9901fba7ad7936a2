import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApp, type TestApp } from './helpers/app.js';
import { graphqlErrorsProblem, restEnvelopeProblem } from './helpers/contract.js';
import {
  assertProperty,
  buildWorld,
  dbState,
  describeRequest,
  fuzzSettings,
  send,
  stateDiff,
  type Answer,
  type DbState,
  type SentRequest,
  type World,
} from './helpers/fuzz.js';
import { restCaseArb, restRequest, restRoutes, type Route } from './helpers/fuzz-rest.js';
import {
  graphqlCaseArb,
  graphqlRequest,
  graphqlTargets,
  type GraphqlCase,
} from './helpers/fuzz-graphql.js';
import { GraphQLSchemaHost } from '@nestjs/graphql';

// Property-based fuzzing of the running app (docs/limits.md, "Fuzzing"): every route of the served
// OpenAPI document and GraphQL operations built from the schema, with bodies, query parameters, ids
// and headers near and far from the rules. Properties: never a 5xx; every 4xx is the documented
// envelope; a refused request changes no row of the database. Fixed seed and <= 15 s per property here;
// `npm run fuzz` for a long run (FUZZ_RUNS, FUZZ_SEED; a failure prints its replay command).

const settings = fuzzSettings();
const CI_RUNS = 300;

let t: TestApp;
let world: World;
let routes: Route[];
let state: DbState;

beforeAll(async () => {
  t = await startApp();
  world = await buildWorld(t);
  routes = await restRoutes(t.url);
  state = await dbState(t);
});
afterAll(() => t?.close());

/** What is wrong with a REST answer, if anything. */
function restProblem(req: SentRequest, res: Answer): string | undefined {
  if (res.status >= 500) {
    return `a ${res.status}`;
  }
  if (!res.headers.get('x-request-id')) {
    return 'no X-Request-Id';
  }
  if (res.status < 400) {
    return undefined;
  }
  if (req.method !== 'HEAD') {
    const problem = restEnvelopeProblem(res.status, res.json);
    if (problem) {
      return `not the error envelope: ${problem}`;
    }
  }
  if (res.status === 401 && !res.headers.get('www-authenticate')) {
    return '401 without WWW-Authenticate';
  }
  if (res.status === 405 && !res.headers.get('allow')) {
    return '405 without Allow';
  }
  if (res.status === 429 && !res.headers.get('retry-after')) {
    return '429 without Retry-After';
  }
  return undefined;
}

/**
 * Sends a request, checks the answer with `problem`, and checks that nothing changed when it was
 * refused (`refused` says whether it was). Keeps the state snapshot current for the next run.
 */
async function exchange(
  req: SentRequest,
  problem: (res: Answer) => string | undefined,
  refused: (res: Answer) => boolean,
): Promise<Answer | undefined> {
  const res = await send(t.url, req);
  if (!res) {
    return undefined;
  }
  const after = await dbState(t);
  const before = state;
  state = after;
  const report = (what: string) =>
    `${what}\n--- request\n${describeRequest(req)}\n--- answer ${res.status}\n${res.text.slice(0, 2000)}`;
  const wrong = res.badJson ? `a JSON content type with a body that does not parse` : problem(res);
  if (wrong) {
    throw new Error(report(wrong));
  }
  if (refused(res)) {
    const diff = stateDiff(before, after);
    if (diff) {
      throw new Error(report(`a refused request changed the database:\n${diff}`));
    }
  }
  world.noteEtag(res.headers.get('etag'));
  return res;
}

describe('fuzz', () => {
  it('the OpenAPI document names the members of every request body (the fuzzer builds bodies from them)', () => {
    const undescribed = routes
      .filter((r) => r.hasBody && r.bodyFields.length === 0)
      .map((r) => `${r.method} ${r.path}`);
    expect(undescribed).toEqual([]);
  });

  it(
    'REST: every route of the OpenAPI document, with fuzzed ids, query, body and headers, answers no 5xx, errors in the envelope, and a refused request changes nothing',
    async () => {
      expect(routes.map((r) => `${r.method} ${r.path}`)).toContain('PATCH /api/v1/users/{id}');
      const seen = new Map<number, number>();
      const property = fc.asyncProperty(restCaseArb(routes, world), async (c) => {
        const req = restRequest(c, world);
        const res = await exchange(
          req,
          (r) => restProblem(req, r),
          (r) => r.status >= 300,
        );
        fc.pre(res !== undefined);
        seen.set(res.status, (seen.get(res.status) ?? 0) + 1);
        if (res.status < 300) {
          world.learn(res.json);
        }
      });
      const runs = await assertProperty('REST', property, settings, CI_RUNS);
      console.log(`REST fuzz: ${runs} runs, statuses ${JSON.stringify(Object.fromEntries(seen))}`);
      // the fuzzer reaches past the validation layer: some requests succeed, some are refused
      expect([...seen.keys()].some((s) => s < 300)).toBe(true);
      expect([...seen.keys()].some((s) => s >= 400)).toBe(true);
    },
    settings.long ? 24 * 3600_000 : 60_000,
  );

  it(
    'GraphQL: every root field with fuzzed variables, broken documents and requests answers no 5xx and no INTERNAL_SERVER_ERROR, documented errors only, and a refused operation changes nothing',
    async () => {
      const targets = graphqlTargets(t.app.get(GraphQLSchemaHost).schema);
      expect(targets.map((x) => x.field.name)).toContain('updateUser');
      const seen = new Map<string, number>();
      const property = fc.asyncProperty(graphqlCaseArb(targets, world), async (c) => {
        const req = graphqlRequest(c, world);
        const res = await exchange(
          req,
          (r) => graphqlProblem(r),
          (r) => graphqlRefused(c, r),
        );
        fc.pre(res !== undefined);
        const outcome = `${res.status}:${firstCode(res.json) ?? 'data'}`;
        seen.set(outcome, (seen.get(outcome) ?? 0) + 1);
        if (res.status === 200) {
          world.learn(res.json);
        }
      });
      const runs = await assertProperty('GraphQL', property, settings, CI_RUNS);
      console.log(
        `GraphQL fuzz: ${runs} runs, answers ${JSON.stringify(Object.fromEntries(seen))}`,
      );
      expect([...seen.keys()].some((s) => s.endsWith(':data'))).toBe(true);
    },
    settings.long ? 24 * 3600_000 : 60_000,
  );
});

function firstCode(json: unknown): string | undefined {
  const one = (Array.isArray(json) ? json[0] : json) as
    | { errors?: { extensions?: { code?: string } }[]; error?: { code?: string } }
    | undefined;
  return one?.errors?.[0]?.extensions?.code ?? one?.error?.code;
}

/** What is wrong with an answer of /graphql, if anything. */
function graphqlProblem(res: Answer): string | undefined {
  if (res.status >= 500) {
    return `a ${res.status}`;
  }
  if (!res.headers.get('x-request-id')) {
    return 'no X-Request-Id';
  }
  if (res.json === undefined) {
    return `a body that is not JSON (${res.headers.get('content-type')})`;
  }
  const results = Array.isArray(res.json) ? res.json : [res.json];
  if (res.status >= 400) {
    // a GraphQL request error, or the REST envelope of a refusal before GraphQL (413, 415, bad JSON)
    const asGraphql = results.every(
      (r) => Array.isArray(r?.errors) && r.errors.length > 0 && !graphqlErrorsProblem(r),
    );
    const asRest = !restEnvelopeProblem(res.status, res.json);
    if (!asGraphql && !asRest) {
      return `a ${res.status} in neither the GraphQL error shape nor the REST envelope: ${
        graphqlErrorsProblem(results[0]) ?? restEnvelopeProblem(res.status, res.json)
      }`;
    }
    return undefined;
  }
  for (const r of results) {
    const problem = graphqlErrorsProblem(r);
    if (problem) {
      return problem;
    }
  }
  return undefined;
}

/** The operation was refused as a whole: an HTTP error, or errors and no root field with a value. */
function graphqlRefused(c: GraphqlCase, res: Answer): boolean {
  if (res.status >= 300) {
    return true;
  }
  const results = (Array.isArray(res.json) ? res.json : [res.json]) as {
    data?: Record<string, unknown> | null;
    errors?: unknown[];
  }[];
  return results.every(
    (r) =>
      Boolean(r?.errors?.length) &&
      (r.data === null || r.data === undefined || (r.data[c.rootField] ?? null) === null),
  );
}
