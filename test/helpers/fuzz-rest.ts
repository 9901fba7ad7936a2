import fc from 'fast-check';
import {
  acceptHeader,
  acceptVersionHeader,
  anyJson,
  contentTypeHeader,
  encodeBody,
  etagHeader,
  headerString,
  nastyNumber,
  nastyString,
  type SentRequest,
  type World,
} from './fuzz.js';

/** A route of the served OpenAPI document. */
export interface Route {
  method: string;
  /** OpenAPI path template, `/api/v1/users/{id}`. */
  path: string;
  /** Member names of the request body's schema (empty when it documents none). */
  bodyFields: string[];
  hasBody: boolean;
}

type Schema = { $ref?: string; properties?: Record<string, unknown> };

/**
 * Every operation of `/api/docs-json`: a route added to the app is fuzzed without touching the tests.
 * The document is the app's own (Nest's route metadata through @nestjs/swagger).
 */
export async function restRoutes(base: string): Promise<Route[]> {
  const res = await fetch(`${base}/api/docs-json`);
  if (res.status !== 200) {
    throw new Error(`GET /api/docs-json -> ${res.status}`);
  }
  const doc = (await res.json()) as {
    paths: Record<string, Record<string, { requestBody?: { content: Record<string, any> } }>>;
    components: { schemas: Record<string, Schema> };
  };
  const resolve = (s: Schema | undefined): Schema | undefined =>
    s?.$ref ? doc.components.schemas[s.$ref.replace('#/components/schemas/', '')] : s;
  const routes: Route[] = [];
  for (const [path, ops] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(ops)) {
      const content = op.requestBody?.content ?? {};
      const schema = resolve(Object.values(content)[0]?.schema);
      routes.push({
        method: method.toUpperCase(),
        path,
        bodyFields: Object.keys(schema?.properties ?? {}),
        hasBody: Boolean(op.requestBody),
      });
    }
  }
  if (routes.length < 10) {
    throw new Error(`the OpenAPI document lists only ${routes.length} operations`);
  }
  return routes;
}

/** Members of the contract's bodies that the OpenAPI document may leave undescribed. */
const CONTRACT_FIELDS = [
  'name',
  'email',
  'password',
  'role',
  'age',
  'title',
  'body',
  'content',
  'items',
  'currency',
  'status',
  'operations',
  'refresh_token',
  'expires_at',
  'redirect_uris',
  'scopes',
  'public',
];

const ROLE = fc.constantFrom('ADMIN', 'USER', 'GUEST', 'admin', 'ROOT');
const SCOPES = fc.constantFrom(
  'openid',
  'profile',
  'email',
  'offline_access',
  'users:read',
  'users:write',
  'orders:write',
  'admin',
  '',
);

/** A path or id value: a real id of the world, a well-formed stranger, or junk. Raw = not encoded. */
export function idArb(world: World): fc.Arbitrary<{ value: string; raw?: boolean }> {
  return fc.oneof(
    { weight: 6, arbitrary: fc.nat().map((n) => ({ value: world.pick(n) ?? 'none' })) },
    {
      weight: 2,
      arbitrary: fc
        .tuple(
          fc.constantFrom('usr', 'pst', 'ord', 'rom', 'msg', 'key', 'xyz'),
          fc.stringMatching(/^[0-9A-HJKMNP-TV-Z]{26}$/),
        )
        .map(([p, s]) => ({ value: `${p}_${s}` })),
    },
    { weight: 2, arbitrary: nastyString.map((value) => ({ value })) },
    {
      weight: 1,
      arbitrary: fc
        .constantFrom(
          '%',
          '%zz',
          '%00',
          '..',
          '.',
          'a%2Fb',
          'me',
          '%E0%A4%A',
          '%C0%AE',
          '%ED%A0%80',
          'x'.repeat(101),
          'usr_' + '0'.repeat(26),
          'usr_01ARZ3NDEKTSV4RRFFQ69G5FA%00',
        )
        .map((value) => ({ value, raw: true })),
    },
  );
}

const members = new WeakMap<World, Map<string, fc.Arbitrary<unknown>>>();

/** A value for a body member, by name: near the rules, and when not `tame` sometimes anything. */
function member(name: string, world: World, tame: boolean): fc.Arbitrary<unknown> {
  const cache = members.get(world) ?? new Map<string, fc.Arbitrary<unknown>>();
  members.set(world, cache);
  const key = `${name} ${tame}`;
  const hit = cache.get(key);
  if (hit) {
    return hit;
  }
  const made = makeMember(name, world, tame);
  cache.set(key, made);
  return made;
}

function makeMember(name: string, world: World, tame: boolean): fc.Arbitrary<unknown> {
  const id = idArb(world).map((i) => i.value);
  const user = fc.record(
    {
      name: fc.string({ maxLength: 110 }),
      email: fc.emailAddress(),
      role: ROLE,
      age: fc.oneof(fc.integer({ min: -2, max: 152 }), fc.constant(null)),
    },
    { requiredKeys: [] },
  );
  const near: Record<string, fc.Arbitrary<unknown>> = {
    name: fc.string({ maxLength: 110 }),
    title: fc.string({ maxLength: 210 }),
    body: fc.string({ maxLength: 300 }),
    content: fc.oneof(fc.string({ maxLength: 50 }), fc.constant('c'.repeat(4001))),
    email: fc.oneof(fc.emailAddress(), fc.constantFrom(ADMIN_LIKE, 'a@b', '@', 'A@EXAMPLE.COM')),
    password: fc.string({ minLength: 10, maxLength: 20 }),
    role: ROLE,
    age: fc.oneof(fc.integer({ min: -2, max: 152 }), fc.constant(null)),
    status: fc.constantFrom('pending', 'paid', 'shipped', 'delivered', 'cancelled', 'PAID', 'x'),
    currency: fc.constantFrom('EUR', 'USD', 'eur', 'EURO', '', 'XXX'),
    items: fc.oneof(
      fc.array(
        fc.record(
          {
            sku: fc.oneof(fc.string({ maxLength: 20 }), nastyString),
            quantity: fc.oneof(fc.integer({ min: -1, max: 10_001 }), nastyNumber),
            unit_price_cents: fc.oneof(fc.integer({ min: -1, max: 100_000_001 }), nastyNumber),
          },
          { requiredKeys: [] },
        ),
        { maxLength: 4 },
      ),
      fc.constant(
        Array.from({ length: 101 }, () => ({ sku: 'a', quantity: 1, unit_price_cents: 1 })),
      ),
      fc.constant([{ sku: 'big', quantity: 10_000, unit_price_cents: 100_000_000 }]),
    ),
    operations: fc.array(
      fc.record(
        { op: fc.constantFrom('create', 'update', 'delete', 'x'), id, data: user },
        { requiredKeys: [] },
      ),
      { maxLength: 3 },
    ),
    refresh_token: fc.oneof(headerString, nastyString),
    expires_at: fc.oneof(
      fc.constantFrom('2020-01-01T00:00:00Z', '2099-01-01T00:00:00+02:00', 'tomorrow', null),
      fc
        .date({ min: new Date('1970-01-01'), max: new Date('2200-01-01'), noInvalidDate: true })
        .map((d) => d.toISOString()),
    ),
    redirect_uris: fc.array(
      fc.oneof(
        fc.constantFrom(
          'https://app.example/cb',
          'http://127.0.0.1:8080/cb',
          'http://evil.example/cb',
          'https://a.example/#frag',
          'not a uri',
          'javascript:alert(1)',
        ),
        nastyString,
      ),
      { maxLength: 3 },
    ),
    scopes: fc.array(SCOPES, { maxLength: 4 }),
    public: fc.boolean(),
  };
  const valid = near[name] ?? (/(^|_)id$/.test(name) ? id : anyJson);
  if (tame) {
    return valid;
  }
  return fc.oneof({ weight: 9, arbitrary: valid }, { weight: 1, arbitrary: anyJson });
}

const ADMIN_LIKE = 'admin@atrium.test';

/** A body of the route's documented members only, each near its rules: often accepted. */
function tameBodyArb(route: Route, world: World): fc.Arbitrary<string | undefined> {
  if (!route.hasBody) {
    return fc.constant(undefined);
  }
  return fc
    .record(Object.fromEntries(route.bodyFields.map((n) => [n, member(n, world, true)])), {
      requiredKeys: route.method === 'PATCH' ? [] : route.bodyFields,
    })
    .map((v) => JSON.stringify(v));
}

/** A request body for a route: a JSON object near its schema, any JSON, broken text, or none. */
function bodyArb(route: Route, world: World): fc.Arbitrary<string | undefined> {
  const names = [...new Set([...route.bodyFields, ...CONTRACT_FIELDS])];
  const own = route.bodyFields.length ? route.bodyFields : CONTRACT_FIELDS;
  const object = fc
    .tuple(
      fc.record(Object.fromEntries(own.map((n) => [n, member(n, world, false)])), {
        requiredKeys: [],
      }),
      fc.dictionary(fc.constantFrom(...names, 'unknown', '__proto__', 'id'), anyJson, {
        maxKeys: 2,
      }),
      fc.boolean(),
    )
    .map(([known, extra, withExtra]) => JSON.stringify(withExtra ? { ...known, ...extra } : known));
  return fc.oneof(
    { weight: 8, arbitrary: object },
    { weight: 1, arbitrary: anyJson.map((v) => JSON.stringify(v)) },
    {
      weight: 1,
      arbitrary: fc.constantFrom(
        '{',
        '{"a":',
        'null',
        '',
        'not json',
        '{"a":1}{"b":2}',
        '\ufeff{}',
        '{"a":1,}',
        "{'a':1}",
        'NaN',
        '{"name":"\\ud800"}',
        '{"name":"a","name":"b"}',
        '['.repeat(40) + ']'.repeat(40),
      ),
    },
    { weight: 1, arbitrary: fc.constant(undefined) },
  );
}

function encodePart(value: string, raw = false): string {
  if (raw) {
    return value;
  }
  try {
    return encodeURIComponent(value);
  } catch {
    // a lone surrogate: send the UTF-8 bytes Node would send for it
    return [...Buffer.from(value, 'utf8')]
      .map((b) => `%${b.toString(16).padStart(2, '0')}`)
      .join('');
  }
}

const QUERY_KEY = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.constantFrom(
      'page',
      'limit',
      'sort',
      'role',
      'author_id',
      'status',
      'api_key',
      'cursor',
      'first',
    ),
  },
  { weight: 1, arbitrary: fc.constantFrom('__proto__', 'page[]', 'limit[0]', 'sort[a]', '') },
  { weight: 1, arbitrary: headerString },
);

function queryValue(world: World): fc.Arbitrary<{ value: string; raw?: boolean }> {
  return fc.oneof(
    {
      weight: 4,
      arbitrary: fc
        .constantFrom(
          '1',
          '0',
          '-1',
          '2',
          '100',
          '101',
          'abc',
          '',
          '1.5',
          '1e3',
          '99999999999999999999',
          'created_at',
          '-created_at',
          'name,-created_at',
          'created_at,created_at',
          '-',
          ',',
          'title',
          'updated_at,,name',
          'ADMIN',
          'USER',
          'pending',
          'null',
        )
        .map((value) => ({ value })),
    },
    {
      weight: 1,
      arbitrary: fc
        .constantFrom('%', '%zz', '%00', '&&', '==')
        .map((value) => ({ value, raw: true })),
    },
    { weight: 1, arbitrary: idArb(world) },
    { weight: 1, arbitrary: nastyString.map((value) => ({ value })) },
  );
}

export interface RestCase {
  route: Route;
  method: string;
  unversioned: boolean;
  ids: { value: string; raw?: boolean }[];
  query: [string, { value: string; raw?: boolean }][];
  caller: string;
  accept?: string;
  acceptVersion?: string;
  ifMatch?: string;
  ifNoneMatch?: string;
  contentType?: string;
  honourCharset: boolean;
  body?: string;
}

const OTHER_METHODS = ['GET', 'HEAD', 'OPTIONS', 'POST', 'PUT', 'PATCH', 'DELETE', 'PROPFIND'];

export function restCaseArb(routes: Route[], world: World): fc.Arbitrary<RestCase> {
  // a header is left out four times in five: each one alone is often enough to refuse a request
  const opt = <T>(a: fc.Arbitrary<T>) =>
    fc.oneof({ weight: 4, arbitrary: fc.constant(undefined) }, { weight: 1, arbitrary: a });
  // one arbitrary per route, built once (building them inside `chain` costs ~100 ms per case)
  const shared = {
    ids: fc.array(idArb(world), { minLength: 2, maxLength: 2 }),
    query: fc.array(fc.tuple(QUERY_KEY, queryValue(world)), { maxLength: 4 }),
  };
  const perRoute = routes.map((route) =>
    fc.record({
      route: fc.constant(route),
      method: fc.oneof(
        { weight: 10, arbitrary: fc.constant(route.method) },
        { weight: 1, arbitrary: fc.constantFrom(...OTHER_METHODS) },
      ),
      unversioned: fc.oneof(
        { weight: 9, arbitrary: fc.constant(false) },
        { weight: 1, arbitrary: fc.constant(true) },
      ),
      ids: shared.ids,
      query: shared.query,
      caller: fc.oneof(
        { weight: 6, arbitrary: fc.constantFrom('admin', 'user') },
        { weight: 4, arbitrary: fc.constantFrom(...Object.keys(world.callers)) },
      ),
      accept: opt(acceptHeader),
      acceptVersion: opt(acceptVersionHeader),
      ifMatch: opt(etagHeader(() => world.etags)),
      ifNoneMatch: opt(etagHeader(() => world.etags)),
      contentType: fc.oneof(
        { weight: 3, arbitrary: fc.constant('application/json') },
        { weight: 2, arbitrary: contentTypeHeader },
        { weight: 1, arbitrary: fc.constant(undefined) },
      ),
      honourCharset: fc.boolean(),
      body: route.hasBody
        ? bodyArb(route, world)
        : fc.option(bodyArb(route, world), { freq: 8, nil: undefined }),
    }),
  );
  // tame cases: the route's own method, credentials that work, no odd header, a body of its members:
  // they get past the HTTP layer and validation, so services and state changes are fuzzed too
  const tame = routes.map(
    (route): fc.Arbitrary<RestCase> =>
      fc.record({
        route: fc.constant(route),
        method: fc.constant(route.method),
        unversioned: fc.constant(false),
        ids: fc.array(
          fc.nat().map((n) => ({ value: world.pick(n) ?? 'none' })),
          { minLength: 2, maxLength: 2 },
        ),
        query: fc.constant<RestCase['query']>([]),
        caller: fc.constantFrom('admin', 'user'),
        accept: fc.constant(undefined),
        acceptVersion: fc.constant(undefined),
        ifMatch: fc.constant(undefined),
        ifNoneMatch: fc.constant(undefined),
        contentType: fc.constant('application/json'),
        honourCharset: fc.constant(false),
        body: tameBodyArb(route, world),
      }),
  );
  return fc.oneof(
    { weight: 2, arbitrary: fc.oneof(...perRoute) },
    { weight: 1, arbitrary: fc.oneof(...tame) },
  );
}

/** The HTTP request of a case. */
export function restRequest(c: RestCase, world: World): SentRequest {
  let i = 0;
  let path = c.route.path.replace(/\{[^}]+\}/g, () => {
    const id = c.ids[i++ % c.ids.length];
    return encodePart(id.value, id.raw);
  });
  if (c.unversioned) {
    path = path.replace(/^\/api\/v1\//, '/api/');
  }
  if (c.query.length) {
    path += `?${c.query.map(([k, v]) => `${encodePart(k)}=${encodePart(v.value, v.raw)}`).join('&')}`;
  }
  const headers: Record<string, string> = { ...world.callers[c.caller] };
  const set = (name: string, value: string | undefined) => {
    if (value !== undefined) {
      headers[name] = value;
    }
  };
  set('accept', c.accept);
  set('accept-version', c.acceptVersion);
  set('if-match', c.ifMatch);
  set('if-none-match', c.ifNoneMatch);
  const bodyAllowed = c.method !== 'GET' && c.method !== 'HEAD';
  const body =
    bodyAllowed && c.body !== undefined
      ? encodeBody(c.body, c.contentType, c.honourCharset)
      : undefined;
  if (body) {
    set('content-type', c.contentType);
  }
  return { method: c.method, path, headers, body };
}
