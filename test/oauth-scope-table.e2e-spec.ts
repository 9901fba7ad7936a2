import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import {
  getNamedType,
  isEnumType,
  isInputObjectType,
  isListType,
  isNonNullType,
  isScalarType,
  type GraphQLInputType,
  type GraphQLSchema,
} from 'graphql';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { API_SCOPES } from '../src/identity/scopes.js';
import { GraphQLSchemaHost } from '@nestjs/graphql';
import { startApp, type TestApp } from './helpers/app.js';
import { adminClient, createUser, type CreatedUser } from './helpers/factories.js';
import { request } from './helpers/http.js';
import { authorize, exchangeCode, registerClient, type RegisteredClient } from './helpers/oauth.js';

const DOC = join(resolve(import.meta.dirname, '..'), 'docs', 'oauth.md');
/** The tokens tried: each API scope alone, and `openid` alone (no API scope at all). */
const TRIED = ['openid', ...API_SCOPES];

/**
 * The table "What each single scope opens" of docs/oauth.md: for each REST route and GraphQL root
 * field, the single scopes whose token passes its scope check.
 */
function documentedTable(): Map<string, string[]> {
  const doc = readFileSync(DOC, 'utf8');
  const start = doc.indexOf('### What each single scope opens');
  expect(start).toBeGreaterThan(0);
  const table = new Map<string, string[]>();
  for (const line of doc.slice(start).split('\n').slice(1)) {
    if (line.startsWith('#')) {
      break;
    }
    const cells = /^\|\s*`([^`]+)`\s*\|\s*([^|]*)\|/.exec(line);
    if (cells) {
      const scopes = [...cells[2].matchAll(/`([^`]+)`/g)].map((m) => m[1]);
      table.set(cells[1], scopes);
    }
  }
  return table;
}

/** A literal for an argument's type: enough for the document to validate. */
function literal(type: GraphQLInputType): string {
  if (isNonNullType(type)) {
    return literal(type.ofType);
  }
  if (isListType(type)) {
    return `[${literal(type.ofType)}]`;
  }
  if (isEnumType(type)) {
    return type.getValues()[0].name;
  }
  if (isInputObjectType(type)) {
    const fields = Object.values(type.getFields()).filter((f) => isNonNullType(f.type));
    return `{ ${fields.map((f) => `${f.name}: ${literal(f.type)}`).join(', ')} }`;
  }
  if (isScalarType(type)) {
    switch (type.name) {
      case 'Int':
      case 'Float':
        return '1';
      case 'Boolean':
        return 'true';
      case 'DateTime':
        return '"2026-01-01T00:00:00.000Z"';
      default:
        return '"x"';
    }
  }
  return '"x"';
}

/** `query { field(required args) { __typename } }` for every Query and Mutation root field. */
function rootOperations(schema: GraphQLSchema): { name: string; query: string }[] {
  const out: { name: string; query: string }[] = [];
  for (const [kind, root] of [
    ['query', schema.getQueryType()],
    ['mutation', schema.getMutationType()],
  ] as const) {
    for (const field of Object.values(root?.getFields() ?? {})) {
      const args = field.args
        .filter((a) => isNonNullType(a.type))
        .map((a) => `${a.name}: ${literal(a.type)}`);
      const named = getNamedType(field.type);
      const selection = isScalarType(named) || isEnumType(named) ? '' : ' { __typename }';
      out.push({
        name: `${kind === 'query' ? 'Query' : 'Mutation'}.${field.name}`,
        query: `${kind} { ${field.name}${args.length ? `(${args.join(', ')})` : ''}${selection} }`,
      });
    }
  }
  return out;
}

/**
 * Every REST route (from the OpenAPI document) and every GraphQL Query and Mutation root field,
 * tried with a USER's token carrying one scope at a time: whether it gets past the checks of the
 * token (its scopes, and its rank: at most USER without `admin`) must be what the table in
 * docs/oauth.md says. Path ids are made up, so nothing existing is changed by the writes that pass.
 */
describe('what each single scope opens, against the table in docs/oauth.md', () => {
  let t: TestApp;
  let user: CreatedUser;
  let partner: RegisteredClient;
  const tokens = new Map<string, string>();

  beforeAll(async () => {
    t = await startApp();
    user = await createUser(t.url);
    partner = await registerClient(await adminClient(t.url), {
      scopes: ['openid', ...API_SCOPES],
    });
    for (const scope of TRIED) {
      const { redirect, verifier } = await authorize(t.url, {
        client: partner,
        email: user.email,
        password: user.password,
        scope,
        prompt: 'consent',
      });
      const res = await exchangeCode(t.url, partner, redirect.searchParams.get('code')!, verifier);
      expect(res.status).toBe(200);
      tokens.set(scope, res.body.access_token as string);
    }
  });
  afterAll(() => t?.close());

  async function actual(): Promise<Map<string, string[]>> {
    const opened = new Map<string, string[]>();
    const open = (key: string, scope: string) => {
      opened.set(key, [...(opened.get(key) ?? []), ...(scope === 'openid' ? [] : [scope])]);
    };
    const doc = (await request(t.url, '/api/docs-json')).body as {
      paths: Record<string, Record<string, { security?: unknown[] }>>;
    };
    for (const [path, ops] of Object.entries(doc.paths)) {
      for (const [method, op] of Object.entries(ops)) {
        if (op.security?.length === 0) {
          continue; // public
        }
        const key = `${method.toUpperCase()} ${path}`;
        opened.set(key, opened.get(key) ?? []);
        const url = path.replace(/\{[^}]+\}/g, 'zzz_made_up_id');
        for (const scope of TRIED) {
          const res = await request(t.url, url, {
            method: method.toUpperCase(),
            auth: { bearer: tokens.get(scope)! },
            ...(['post', 'put', 'patch'].includes(method) ? { body: {} } : {}),
          });
          // made-up ids: a route the token may use answers 404 or 422 (or 2xx), before any rule of
          // the service could refuse; 403 is the guards' refusal (the scope, or the token's rank)
          if (res.status !== 403 && res.status !== 401) {
            open(key, scope);
          }
        }
      }
    }
    const schema = t.app.get(GraphQLSchemaHost).schema;
    for (const { name, query } of rootOperations(schema)) {
      opened.set(name, opened.get(name) ?? []);
      for (const scope of TRIED) {
        const res = await request(t.url, '/graphql', {
          method: 'POST',
          auth: { bearer: tokens.get(scope)! },
          body: { query },
        });
        const body = res.body as {
          data?: unknown;
          errors?: { extensions?: Record<string, unknown> }[];
        };
        const first = body.errors?.[0]?.extensions;
        expect(first?.code, `${name}: ${JSON.stringify(body)}`).not.toBe(
          'GRAPHQL_VALIDATION_FAILED',
        );
        // refused before execution (the scopes), or by the field's role as it resolves
        const refused = body.errors?.some((e) => e.extensions?.code === 'FORBIDDEN') ?? false;
        if (!refused) {
          open(name, scope);
        }
      }
    }
    return opened;
  }

  it('every route and root field opens for exactly the scopes the table lists', async () => {
    const real = await actual();
    const table = documentedTable();
    const printed = [...real]
      .map(([key, scopes]) => `| \`${key}\` | ${scopes.map((s) => `\`${s}\``).join(' ')} |`)
      .join('\n');
    expect([...table.keys()].sort(), `the table should be:\n${printed}`).toEqual(
      [...real.keys()].sort(),
    );
    for (const [key, scopes] of real) {
      expect(table.get(key)?.sort(), `${key}; the table should be:\n${printed}`).toEqual(
        scopes.sort(),
      );
    }
  }, 120_000);
});
