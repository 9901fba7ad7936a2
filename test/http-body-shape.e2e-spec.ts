import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApp, type TestApp } from './helpers/app.js';
import { createUser, unique } from './helpers/factories.js';
import { request } from './helpers/http.js';

const nested = (n: number, inner = '') => `${'['.repeat(n)}${inner}${']'.repeat(n)}`;

function post(t: TestApp, path: string, rawBody: string, headers: Record<string, string> = {}) {
  return request(t.url, path, {
    method: 'POST',
    rawBody,
    headers: { 'content-type': 'application/json', ...headers },
  });
}

function expectShapeRefusal(res: Awaited<ReturnType<typeof request>>, message: RegExp): void {
  expect(res.status, res.text).toBe(400);
  expect(res.body).toEqual({
    error: { code: 'bad_request', message: expect.stringMatching(message) },
  });
}

describe('JSON body shape limits (defaults: depth 32, 10,000 entries)', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startApp();
  });
  afterAll(async () => {
    await t.close();
  });

  it('answers 400 in the envelope for a body nested thousands of levels deep (was a 500)', async () => {
    const res = await post(t, '/api/v1/auth/register', `{"name":${nested(5_000)}}`);
    expectShapeRefusal(res, /nests deeper than 32 levels/);
  });

  it('lets depth 32 through to validation and refuses depth 33', async () => {
    const email = `${unique()}@example.com`;
    // depth 32 in all (the body object is level 1): validation answers, not the shape check
    const ok = await post(
      t,
      '/api/v1/auth/register',
      JSON.stringify({ email, password: 'long-enough-pw-1' }).replace(
        /}$/,
        `,"name":${nested(31)}}`,
      ),
    );
    expect(ok.status, ok.text).toBe(422);
    const deep = await post(
      t,
      '/api/v1/auth/register',
      JSON.stringify({ email, password: 'long-enough-pw-1' }).replace(
        /}$/,
        `,"name":${nested(32)}}`,
      ),
    );
    expectShapeRefusal(deep, /deeper than 32/);
  });

  it('refuses more than 10,000 members and elements', async () => {
    const wide = `{"name":[${Array.from({ length: 10_000 }, () => '0').join(',')}]}`; // 10,001 entries
    expectShapeRefusal(await post(t, '/api/v1/auth/register', wide), /more than 10000 members/);
    const within = `{"name":[${Array.from({ length: 9_999 }, () => '0').join(',')}]}`; // 10,000
    expect((await post(t, '/api/v1/auth/register', within)).status).toBe(422);
  });

  it('bounds application/merge-patch+json bodies too', async () => {
    const user = await createUser(t.url);
    const res = await request(t.url, `/api/v1/users/${user.id}`, {
      method: 'PATCH',
      rawBody: `{"name":${nested(5_000)}}`,
      headers: {
        'content-type': 'application/merge-patch+json',
        authorization: `Bearer ${user.token}`,
      },
    });
    expectShapeRefusal(res, /deeper than 32/);
    const stored = await user.client.get(`/api/v1/users/${user.id}`);
    expect(stored.body.data.name).toBe(user.body.name);
  });

  it('refuses __proto__ members, saying what is refused, why and where (not "not valid JSON")', async () => {
    const res = await post(t, '/api/v1/auth/register', '{"__proto__":{"admin":true}}');
    expect(res.status).toBe(400);
    expect(res.body).toEqual({
      error: {
        code: 'bad_request',
        message:
          'The JSON body is refused: member name "__proto__" is not allowed (at __proto__), as it can change object prototypes',
        details: [{ field: '__proto__', message: 'member name "__proto__" is not allowed' }],
      },
    });
    // nested, and in an array: the path names it
    const nestedRes = await post(
      t,
      '/api/v1/auth/register',
      '{"email":"x@example.com","tags":[{"ok":1},{"a b":{"__proto__":{}}}]}',
    );
    expect(nestedRes.status).toBe(400);
    expect(nestedRes.body.error.details).toEqual([
      { field: 'tags[1]["a b"].__proto__', message: 'member name "__proto__" is not allowed' },
    ]);
    // constructor.prototype, the parser's other rule
    const ctor = await post(t, '/api/v1/auth/register', '{"a":{"constructor":{"prototype":{}}}}');
    expect(ctor.status).toBe(400);
    expect(ctor.body.error.message).toMatch(/"prototype" inside a member "constructor"/);
    expect(ctor.body.error.details).toEqual([
      {
        field: 'a.constructor.prototype',
        message: 'a member "prototype" inside a member "constructor" is not allowed',
      },
    ]);
    // JSON that is not valid is still said to be so; a member merely called "constructor" passes
    const broken = await post(t, '/api/v1/auth/register', '{"__proto__":');
    expect(broken.status).toBe(400);
    expect(broken.body.error.message).toMatch(/not valid JSON/);
    const named = await post(t, '/api/v1/auth/register', '{"constructor":"x"}');
    expect(named.status).toBe(422);
    // nothing was created from a refused body
    expect(
      (await post(t, '/api/v1/auth/token', '{"email":"x@example.com","password":"whatever-1"}'))
        .status,
    ).toBe(401);
  });

  it('refuses a __proto__ member in a GraphQL request body in the GraphQL error shape, naming it', async () => {
    const res = await post(
      t,
      '/graphql',
      '{"query":"query($v: String) { __typename }","variables":{"v":{"__proto__":{"x":1}}}}',
    );
    expect(res.status).toBe(400);
    expect(res.body.data).toBeUndefined();
    expect(res.body.errors).toHaveLength(1);
    expect(res.body.errors[0].message).toBe(
      'The JSON body is refused: member name "__proto__" is not allowed (at variables.v.__proto__), as it can change object prototypes',
    );
    expect(res.body.errors[0].extensions.code).toBe('BAD_REQUEST');
  });

  it('bounds GraphQL variables sent over HTTP POST, answering 400 in GraphQL error shape', async () => {
    const body = JSON.stringify({
      query: 'query($v: String) { __typename }',
      variables: { v: 'x' },
    }).replace('"x"', nested(5_000, '"x"'));
    const res = await post(t, '/graphql', body);
    expect(res.status).toBe(400);
    expect(res.body.data).toBeUndefined();
    expect(res.body.errors).toHaveLength(1);
    expect(res.body.errors[0].message).toMatch(/nests deeper than 32 levels/);
    // the same extensions Apollo gives its own malformed-request errors
    const apollo = await post(t, '/graphql', '{"variables":{}}');
    expect(apollo.status).toBe(400);
    expect(res.body.errors[0].extensions).toEqual(apollo.body.errors[0].extensions);
  });

  it('bounds the variables of GET /graphql (JSON in the query string) the same way', async () => {
    const variables = JSON.stringify({ v: 'x' }).replace('"x"', nested(1_000, '"x"'));
    const query = encodeURIComponent('query($v: ID!) { post(id: $v) { id } }');
    const res = await request(
      t.url,
      `/graphql?query=${query}&variables=${encodeURIComponent(variables)}`,
      { headers: { 'apollo-require-preflight': 'true' } },
    );
    expect(res.status).toBe(400);
    expect(res.body.data).toBeUndefined();
    expect(res.body.errors[0].message).toBe('The JSON in `variables` nests deeper than 32 levels');
    const ok = await request(t.url, `/graphql?query=${encodeURIComponent('{ __typename }')}`, {
      headers: { 'apollo-require-preflight': 'true' },
    });
    expect(ok.status).toBe(200);
    expect(ok.body.data).toEqual({ __typename: 'Query' });
  });

  it('leaves ordinary GraphQL requests alone', async () => {
    const res = await post(t, '/graphql', JSON.stringify({ query: '{ __typename }' }));
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual({ __typename: 'Query' });
    expect(res.body.errors).toBeUndefined();
  });
});

describe('JSON body shape limits (configured)', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startApp({ BODY_MAX_DEPTH: '3', BODY_MAX_ITEMS: '4' });
  });
  afterAll(async () => {
    await t.close();
  });

  it('applies BODY_MAX_DEPTH and BODY_MAX_ITEMS', async () => {
    expectShapeRefusal(
      await post(t, '/api/v1/auth/register', '{"name":[[["x"]]]}'),
      /deeper than 3 levels/,
    );
    expectShapeRefusal(
      await post(t, '/api/v1/auth/register', '{"a":1,"b":2,"c":3,"d":4,"e":5}'),
      /more than 4 members/,
    );
    const ok = await post(t, '/api/v1/auth/register', '{"name":[["x"]]}');
    expect(ok.status).toBe(422);
  });
});
