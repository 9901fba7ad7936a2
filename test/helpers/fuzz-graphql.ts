import fc from 'fast-check';
import {
  getNamedType,
  GraphQLEnumType,
  GraphQLInputObjectType,
  GraphQLList,
  GraphQLNonNull,
  isInterfaceType,
  isLeafType,
  isNonNullType,
  isObjectType,
  isUnionType,
  type GraphQLField,
  type GraphQLInputType,
  type GraphQLNamedType,
  type GraphQLSchema,
} from 'graphql';
import {
  acceptHeader,
  anyJson,
  contentTypeHeader,
  encodeBody,
  nastyNumber,
  nastyString,
  type SentRequest,
  type World,
} from './fuzz.js';
import { idArb } from './fuzz-rest.js';

/** One root field of the schema, as a fuzz target. */
export interface GraphqlTarget {
  operation: 'query' | 'mutation' | 'subscription';
  field: GraphQLField<unknown, unknown>;
}

/** Every root field of the app's own schema: a new query or mutation is fuzzed without editing tests. */
export function graphqlTargets(schema: GraphQLSchema): GraphqlTarget[] {
  const out: GraphqlTarget[] = [];
  for (const [operation, type] of [
    ['query', schema.getQueryType()],
    ['mutation', schema.getMutationType()],
    ['subscription', schema.getSubscriptionType()],
  ] as const) {
    for (const field of Object.values(type?.getFields() ?? {})) {
      out.push({ operation, field });
    }
  }
  return out;
}

/** Input fields whose rules a random string rarely meets (docs/contract.md section 4). */
const named: Record<string, fc.Arbitrary<unknown>> = {
  email: fc.emailAddress(),
  password: fc.string({ minLength: 12, maxLength: 20 }),
  name: fc.string({ minLength: 1, maxLength: 60 }),
  title: fc.string({ minLength: 1, maxLength: 60 }),
  body: fc.string({ maxLength: 100 }),
  content: fc.string({ minLength: 1, maxLength: 100 }),
  age: fc.integer({ min: 0, max: 150 }),
};

/** A value for an input type: mostly of that type, near its rules; sometimes anything. */
function inputValue(
  type: GraphQLInputType,
  world: World,
  depth: number,
  tame: boolean,
): fc.Arbitrary<unknown> {
  const typed = typedValue(type, world, depth, tame);
  return tame
    ? typed
    : fc.oneof({ weight: 9, arbitrary: typed }, { weight: 1, arbitrary: anyJson });
}

function typedValue(
  type: GraphQLInputType,
  world: World,
  depth: number,
  tame: boolean,
): fc.Arbitrary<unknown> {
  if (type instanceof GraphQLNonNull) {
    return typedValue(type.ofType, world, depth, tame);
  }
  if (type instanceof GraphQLList) {
    return fc.array(inputValue(type.ofType, world, depth + 1, tame), {
      maxLength: 3,
    });
  }
  if (type instanceof GraphQLEnumType && tame) {
    return fc.constantFrom(...type.getValues().map((v) => v.name));
  }
  if (type instanceof GraphQLEnumType) {
    return fc.oneof(
      { weight: 5, arbitrary: fc.constantFrom(...type.getValues().map((v) => v.name)) },
      { weight: 1, arbitrary: fc.constantFrom('NOPE', 'admin', '') },
    );
  }
  if (type instanceof GraphQLInputObjectType) {
    if (depth > 3) {
      return fc.constant({});
    }
    const fields = Object.values(type.getFields());
    return fc.record(
      Object.fromEntries(
        fields.map((f) => [
          f.name,
          tame
            ? (named[f.name] ?? inputValue(f.type, world, depth + 1, tame))
            : fc.oneof(
                {
                  weight: 3,
                  arbitrary: named[f.name] ?? inputValue(f.type, world, depth + 1, tame),
                },
                { weight: 1, arbitrary: inputValue(f.type, world, depth + 1, tame) },
              ),
        ]),
      ),
      { requiredKeys: tame ? fields.filter((f) => isNonNullType(f.type)).map((f) => f.name) : [] },
    );
  }
  switch (type.name) {
    case 'ID':
      return tame ? fc.nat().map((n) => world.pick(n) ?? 'none') : idArb(world).map((i) => i.value);
    case 'Int':
      return tame
        ? fc.integer({ min: 1, max: 20 })
        : fc.oneof(fc.integer({ min: -2, max: 120 }), nastyNumber);
    case 'Float':
      return nastyNumber;
    case 'Boolean':
      return fc.boolean();
    case 'DateTime':
      return fc.oneof(
        fc.constantFrom('2026-01-01T00:00:00Z', '2026-01-01T00:00:00+02:00', '2026-01-01', 'x'),
        nastyString,
      );
    case 'String':
      if (tame) {
        return fc.string({ minLength: 1, maxLength: 30 });
      }
      return fc.oneof(
        { weight: 3, arbitrary: fc.string({ maxLength: 60 }) },
        { weight: 1, arbitrary: fc.emailAddress() },
        { weight: 1, arbitrary: nastyString },
      );
    default:
      return anyJson;
  }
}

function typeString(type: GraphQLInputType): string {
  return String(type);
}

/** A selection of the fields of a type that take no required argument, two levels deep. */
function selection(type: GraphQLNamedType, depth: number): string {
  if (isLeafType(type)) {
    return '';
  }
  if (isUnionType(type)) {
    return `{ __typename ${type
      .getTypes()
      .map((t) => `... on ${t.name} ${selection(t, depth + 1)}`)
      .join(' ')} }`;
  }
  if (!isObjectType(type) && !isInterfaceType(type)) {
    return '';
  }
  const parts = ['__typename'];
  for (const f of Object.values(type.getFields())) {
    if (f.args.some((a) => isNonNullType(a.type) && a.defaultValue === undefined)) {
      continue;
    }
    const named = getNamedType(f.type);
    if (isLeafType(named)) {
      parts.push(f.name);
    } else if (depth < 2) {
      parts.push(`${f.name} ${selection(named, depth + 1)}`);
    }
  }
  return `{ ${parts.join(' ')} }`;
}

export interface GraphqlCase {
  document: string;
  variables: unknown;
  operationName?: string;
  extensions?: unknown;
  transport: 'post' | 'get' | 'batch' | 'raw';
  /** The raw body when `transport` is `raw`. */
  raw?: string;
  caller: string;
  accept?: string;
  contentType?: string;
  preflight: boolean;
  rootField: string;
}

/** Operations on every root field with fuzzed variables, plus broken documents and requests. */
export function graphqlCaseArb(targets: GraphqlTarget[], world: World): fc.Arbitrary<GraphqlCase> {
  const perTarget = (tame: boolean) =>
    targets.map(({ operation, field }) => {
      const args = field.args;
      const declared = fc.array(fc.boolean(), { minLength: args.length, maxLength: args.length });
      return fc
        .record({
          present: declared,
          values: fc.tuple(...args.map((a) => inputValue(a.type, world, 0, tame))),
          // sometimes a variable is declared with another type than its argument's
          wrongType: tame
            ? fc.constant(-1)
            : fc.oneof(
                { weight: 9, arbitrary: fc.constant(-1) },
                { weight: 1, arbitrary: fc.nat(Math.max(0, args.length - 1)) },
              ),
          alias: fc.boolean(),
        })
        .map(({ present, values, wrongType, alias }) => {
          const used = args.filter(
            (a, i) => present[i] || (isNonNullType(a.type) && a.defaultValue === undefined),
          );
          const defs = used.map(
            (a) => `$${a.name}: ${args.indexOf(a) === wrongType ? 'String' : typeString(a.type)}`,
          );
          const call = used.length
            ? `(${used.map((a) => `${a.name}: $${a.name}`).join(', ')})`
            : '';
          const variables = Object.fromEntries(used.map((a) => [a.name, values[args.indexOf(a)]]));
          const sel = selection(getNamedType(field.type), 1);
          const document = `${operation} Fuzz${defs.length ? `(${defs.join(', ')})` : ''} { ${alias ? 'a: ' : ''}${field.name}${call} ${sel} }`;
          return { document, variables, rootField: alias ? 'a' : field.name };
        });
    });
  const operation = fc.oneof(...perTarget(false));
  // tame cases: well-typed variables near the rules, working credentials, no odd header
  const tameCase = fc.tuple(fc.oneof(...perTarget(true)), fc.constantFrom('admin', 'user')).map(
    ([op, caller]): GraphqlCase => ({
      document: op.document,
      variables: op.variables,
      transport: 'post',
      contentType: 'application/json',
      caller,
      preflight: false,
      rootField: op.rootField,
    }),
  );
  const broken = fc.oneof(
    fc.constantFrom(
      '',
      '{',
      '}{',
      'query {',
      '{ __typename }',
      '{ me { id } } { me { id } }',
      'query A { me { id } } query A { me { id } }',
      'query ($a: Int) { me { id } }',
      '{ me { id(x: 1) } }',
      '{ users(first: 101) { totalCount } }',
      '{ users(first: -1) { totalCount } }',
      '{ node(id: "usr_") { id } }',
      'mutation { deleteUser(id: "") }',
      '{ me { ...F } } fragment F on User { ...F }',
      '{ __schema { types { name } } }',
      '#',
      '{ me { id } } # \u0000',
    ),
    nastyString,
  );
  const document = fc.oneof(
    { weight: 8, arbitrary: operation },
    { weight: 1, arbitrary: broken.map((d) => ({ document: d, variables: {}, rootField: '' })) },
    {
      weight: 1,
      arbitrary: fc
        .tuple(operation, fc.nat())
        .map(([o, n]) => ({ ...o, document: o.document.slice(0, n % (o.document.length + 1)) })),
    },
  );
  const wild = fc
    .record({
      op: document,
      variablesNoise: fc.oneof(
        { weight: 9, arbitrary: fc.constant(undefined) },
        { weight: 1, arbitrary: anyJson.map((v) => ({ v })) },
      ),
      operationName: fc.oneof(
        { weight: 6, arbitrary: fc.constant(undefined) },
        { weight: 2, arbitrary: fc.constant('Fuzz') },
        { weight: 1, arbitrary: fc.constantFrom('Other', '', '__proto__') },
        { weight: 1, arbitrary: anyJson },
      ),
      extensions: fc.oneof(
        { weight: 9, arbitrary: fc.constant(undefined) },
        {
          weight: 1,
          arbitrary: fc.oneof(
            anyJson,
            fc.constant({ persistedQuery: { version: 1, sha256Hash: 'abc' } }),
          ),
        },
      ),
      transport: fc.oneof(
        { weight: 12, arbitrary: fc.constant('post' as const) },
        { weight: 3, arbitrary: fc.constant('get' as const) },
        { weight: 1, arbitrary: fc.constant('batch' as const) },
        { weight: 1, arbitrary: fc.constant('raw' as const) },
      ),
      raw: fc.constantFrom('{', '[]', '[1]', 'null', '"x"', '{"query": 1}', '{"query": null}', ''),
      caller: fc.oneof(
        { weight: 6, arbitrary: fc.constantFrom('admin', 'user') },
        { weight: 4, arbitrary: fc.constantFrom(...Object.keys(world.callers)) },
      ),
      accept: fc.oneof(
        { weight: 6, arbitrary: fc.constant(undefined) },
        { weight: 2, arbitrary: fc.constant('application/graphql-response+json') },
        { weight: 1, arbitrary: acceptHeader },
      ),
      contentType: fc.oneof(
        { weight: 8, arbitrary: fc.constant('application/json') },
        { weight: 1, arbitrary: contentTypeHeader },
      ),
      preflight: fc.boolean(),
    })
    .map((r) => ({
      document: r.op.document,
      variables: r.variablesNoise ? r.variablesNoise.v : r.op.variables,
      operationName: r.operationName as string | undefined,
      extensions: r.extensions,
      transport: r.transport,
      raw: r.raw,
      caller: r.caller,
      accept: r.accept,
      contentType: r.contentType,
      preflight: r.preflight,
      rootField: r.op.rootField,
    }));
  return fc.oneof({ weight: 2, arbitrary: wild }, { weight: 1, arbitrary: tameCase });
}

/** The HTTP request of a case. */
export function graphqlRequest(c: GraphqlCase, world: World): SentRequest {
  const headers: Record<string, string> = { ...world.callers[c.caller] };
  if (c.accept !== undefined) {
    headers.accept = c.accept;
  }
  if (c.preflight) {
    headers['apollo-require-preflight'] = 'true';
  }
  const payload = {
    query: c.document,
    variables: c.variables,
    operationName: c.operationName,
    extensions: c.extensions,
  };
  if (c.transport === 'get') {
    const params = new URLSearchParams({ query: c.document });
    for (const key of ['variables', 'operationName', 'extensions'] as const) {
      const v = payload[key];
      if (v !== undefined) {
        params.set(key, typeof v === 'string' ? v : JSON.stringify(v));
      }
    }
    return { method: 'GET', path: `/graphql?${params.toString()}`, headers };
  }
  const text =
    c.transport === 'raw'
      ? (c.raw ?? '')
      : JSON.stringify(c.transport === 'batch' ? [payload, payload] : payload);
  if (c.contentType !== undefined) {
    headers['content-type'] = c.contentType;
  }
  return { method: 'POST', path: '/graphql', headers, body: encodeBody(text, c.contentType, true) };
}
