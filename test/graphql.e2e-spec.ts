import { DataSource } from 'typeorm';
import { readFileSync } from 'node:fs';
import { printSchemaWithDirectives } from '@graphql-tools/utils';
import { GraphQLSchemaHost } from '@nestjs/graphql';
import { isInterfaceType, isObjectType, lexicographicSortSchema } from 'graphql';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_EMAIL, ADMIN_PASSWORD, startApp, type TestApp } from './helpers/app.js';
import {
  createApiKey,
  createUser,
  tokenFor,
  unique,
  type CreatedUser,
} from './helpers/factories.js';
import type { Credentials } from './helpers/http.js';
import { codes, gql, sqlCounter } from './graphql-client.js';

const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

/** The SDL with the directive applications of each line sorted (and moved to the line's end). */
function directivesSorted(sdl: string): string {
  const directive = /\s@\w+(?:\((?:[^()"]|"(?:[^"\\]|\\.)*")*\))?/g;
  return sdl
    .split('\n')
    .map((line) => {
      const found = line.match(directive);
      return found
        ? `${line.replace(directive, '')} ${found
            .map((d) => d.trim())
            .sort()
            .join(' ')}`
        : line;
    })
    .join('\n');
}

describe('GraphQL API (/graphql)', () => {
  let t: TestApp;
  let admin: Credentials;
  let alice: CreatedUser;
  let bob: CreatedUser;
  let guest: CreatedUser;
  let alicePost: string;

  beforeAll(async () => {
    t = await startApp();
    admin = { bearer: await tokenFor(t.url, ADMIN_EMAIL, ADMIN_PASSWORD) };
    alice = await createUser(t.url, { name: 'Alice Liddell', age: 30 });
    bob = await createUser(t.url, { name: 'Bob Builder' });
    guest = await createUser(t.url, { name: 'Gus Guest', role: 'GUEST' });
    const res = await gql(
      t.url,
      'mutation { createPost(input: { title: "Wonderland notes", body: "rabbit hole" }) { id } }',
      {
        auth: { bearer: alice.token },
      },
    );
    alicePost = res.body.data.createPost.id;
  });
  afterAll(async () => {
    await t.close();
  });

  describe('operation forms (spec 4.2)', () => {
    it('answers an anonymous query (selection set only) with exactly the fields asked for', async () => {
      const res = await gql(t.url, `{ user(id: "${alice.id}") { id name } }`, {
        auth: { bearer: bob.token },
      });
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toContain('application/json');
      expect(res.body).toEqual({
        data: { user: { id: alice.id, name: 'Alice Liddell' } },
        extensions: { cost: expect.objectContaining({ requested: 1 + 2, limit: 1000 }) },
      });
    });

    it('runs a named query with typed variables, choosing the operation by operationName', async () => {
      const res = await gql(
        t.url,
        `query Other { me { id } }
         query GetUser($id: ID!, $withAge: Boolean!) { user(id: $id) { name age @include(if: $withAge) } }`,
        {
          auth: { bearer: bob.token },
          variables: { id: alice.id, withAge: true },
          operationName: 'GetUser',
        },
      );
      expect(res.body.errors).toBeUndefined();
      expect(res.body.data).toEqual({ user: { name: 'Alice Liddell', age: 30 } });
    });

    it('selects one field twice with different arguments through aliases', async () => {
      const res = await gql(
        t.url,
        `{ a: user(id: "${alice.id}") { name } b: user(id: "${bob.id}") { name } }`,
        {
          auth: admin,
        },
      );
      expect(res.body.data).toEqual({ a: { name: 'Alice Liddell' }, b: { name: 'Bob Builder' } });
    });

    it('resolves named and inline fragments on the Node interface, with __typename', async () => {
      const res = await gql(
        t.url,
        `fragment UserBits on User { name role }
         { u: node(id: "${alice.id}") { __typename id ...UserBits ... on Post { title } }
           p: node(id: "${alicePost}") { __typename id ...UserBits ... on Post { title author { id } } } }`,
        { auth: admin },
      );
      expect(res.body.errors).toBeUndefined();
      expect(res.body.data).toEqual({
        u: { __typename: 'User', id: alice.id, name: 'Alice Liddell', role: 'USER' },
        p: {
          __typename: 'Post',
          id: alicePost,
          title: 'Wonderland notes',
          author: { id: alice.id },
        },
      });
    });

    it('resolves inline fragments on the SearchResult union', async () => {
      const res = await gql(
        t.url,
        `{ search(term: "ali", first: 10) { __typename ... on User { id name } ... on Post { id title } } }`,
        { auth: admin },
      );
      expect(res.body.errors).toBeUndefined();
      expect(res.body.data.search).toContainEqual({
        __typename: 'User',
        id: alice.id,
        name: 'Alice Liddell',
      });
      const posts = await gql(
        t.url,
        `{ search(term: "WONDER") { ... on Post { id title } ... on User { id } } }`,
        {
          auth: admin,
        },
      );
      expect(posts.body.data.search).toEqual([{ id: alicePost, title: 'Wonderland notes' }]);
    });

    it('honours @include and @skip from variables', async () => {
      const q = `query($yes: Boolean!, $no: Boolean!) {
        user(id: "${alice.id}") { id name @include(if: $yes) age @skip(if: $yes) role @include(if: $no) createdAt @skip(if: $no) } }`;
      const res = await gql(t.url, q, { auth: admin, variables: { yes: true, no: false } });
      expect(res.body.data.user).toEqual({
        id: alice.id,
        name: 'Alice Liddell',
        createdAt: expect.stringMatching(ISO),
      });
    });

    it('exposes __schema with the members the spec lists, including the custom directives', async () => {
      const res = await gql(
        t.url,
        '{ __schema { types { name } queryType { name } mutationType { name } directives { name locations args { name } } } }',
      ); // anonymous: introspection needs no credentials
      expect(res.status).toBe(200);
      const schema = res.body.data.__schema;
      expect(schema.queryType).toEqual({ name: 'Query' });
      expect(schema.mutationType).toEqual({ name: 'Mutation' });
      const types = schema.types.map((x: { name: string }) => x.name);
      for (const name of [
        'Node',
        'User',
        'Post',
        'Admin',
        'SearchResult',
        'Role',
        'DateTime',
        'CreateUserInput',
        'UserConnection',
        'PageInfo',
      ]) {
        expect(types).toContain(name);
      }
      const directives = Object.fromEntries(
        schema.directives.map(
          (d: { name: string; locations: string[]; args: { name: string }[] }) => [d.name, d],
        ),
      );
      expect(directives.auth).toEqual({
        name: 'auth',
        locations: ['FIELD_DEFINITION', 'OBJECT'],
        args: [{ name: 'requires' }, { name: 'scopes' }],
      });
      expect(directives.cost.locations).toEqual(['FIELD_DEFINITION']);
      expect(directives.cacheControl.args.map((a: { name: string }) => a.name)).toEqual(
        expect.arrayContaining(['maxAge', 'scope']),
      );
      for (const name of ['include', 'skip', 'deprecated']) {
        expect(directives[name]).toBeDefined();
      }
    });

    it('exposes __type with fields, their types and arguments (User.age from the type extension)', async () => {
      const res = await gql(
        t.url,
        '{ __type(name: "User") { kind interfaces { name } fields { name type { name kind } args { name type { name } } } } }',
      );
      const type = res.body.data.__type;
      expect(type.kind).toBe('OBJECT');
      expect(type.interfaces).toEqual([{ name: 'Node' }]);
      const fields = Object.fromEntries(type.fields.map((f: { name: string }) => [f.name, f]));
      expect(Object.keys(fields)).toEqual(
        expect.arrayContaining(['id', 'name', 'email', 'age', 'role', 'createdAt', 'posts']),
      );
      expect(fields.age.type).toEqual({ name: 'Int', kind: 'SCALAR' });
      expect(fields.email.type).toEqual({ name: 'String', kind: 'SCALAR' }); // nullable: no NON_NULL wrapper
      expect(fields.posts.args).toEqual([
        { name: 'after', type: { name: 'String' } },
        { name: 'first', type: { name: 'Int' } },
      ]);
      const role = await gql(t.url, '{ __type(name: "Role") { enumValues { name } } }');
      expect(role.body.data.__type.enumValues.map((v: { name: string }) => v.name).sort()).toEqual([
        'ADMIN',
        'GUEST',
        'USER',
      ]);
    });

    it('marks Post.content @deprecated with a reason and still serves it', async () => {
      const res = await gql(
        t.url,
        '{ __type(name: "Post") { fields(includeDeprecated: true) { name isDeprecated deprecationReason } } }',
      );
      const content = res.body.data.__type.fields.find(
        (f: { name: string }) => f.name === 'content',
      );
      expect(content).toEqual({
        name: 'content',
        isDeprecated: true,
        deprecationReason: 'Use `body`.',
      });
      const visible = await gql(t.url, '{ __type(name: "Post") { fields { name } } }');
      expect(visible.body.data.__type.fields.map((f: { name: string }) => f.name)).not.toContain(
        'content',
      );
      const value = await gql(t.url, `{ post(id: "${alicePost}") { content body } }`, {
        auth: admin,
      });
      expect(value.body.data.post).toEqual({ content: 'rabbit hole', body: 'rabbit hole' });
    });

    it('serializes DateTime as RFC 3339 UTC with milliseconds and accepts any offset on input', async () => {
      const res = await gql(t.url, `{ post(id: "${alicePost}") { createdAt updatedAt } }`, {
        auth: admin,
      });
      expect(res.body.data.post.createdAt).toMatch(ISO);
      const future = await gql(t.url, '{ posts(since: "2999-01-01T02:00:00+02:00") { id } }', {
        auth: admin,
      });
      expect(future.body).toMatchObject({ data: { posts: [] } });
      const past = await gql(t.url, 'query($s: DateTime) { posts(since: $s) { id } }', {
        auth: admin,
        variables: { s: '2000-01-01T00:00:00-05:00' },
      });
      expect(past.body.data.posts.map((p: { id: string }) => p.id)).toContain(alicePost);
    });

    it('rejects an invalid DateTime: a literal fails validation, a variable is BAD_USER_INPUT', async () => {
      const literal = await gql(t.url, '{ posts(since: "yesterday") { id } }', { auth: admin });
      expect(codes(literal.body)).toEqual(['GRAPHQL_VALIDATION_FAILED']);
      expect(literal.body.data).toBeUndefined();
      for (const bad of ['2026-02-30T00:00:00Z', '2026-11-21T22:12:14', '2026-11-21 22:12:14Z']) {
        const variable = await gql(t.url, 'query($s: DateTime) { posts(since: $s) { id } }', {
          auth: admin,
          variables: { s: bad },
        });
        expect(codes(variable.body), bad).toEqual(['BAD_USER_INPUT']);
      }
    });
  });

  describe('authentication', () => {
    it('accepts Basic, Bearer, X-API-Key and (GET only) ?api_key=', async () => {
      const key = await createApiKey(alice.client);
      const q = '{ me { id } }';
      const forms: [string, Promise<{ body: { data?: { me?: { id: string } } } }>][] = [
        ['basic', gql(t.url, q, { auth: { basic: [alice.email, alice.password] } })],
        ['bearer', gql(t.url, q, { auth: { bearer: alice.token } })],
        ['x-api-key', gql(t.url, q, { auth: { apiKey: key.key } })],
        ['?api_key', gql(t.url, q, { method: 'GET', query: { api_key: key.key } })],
      ];
      for (const [name, pending] of forms) {
        expect((await pending).body.data?.me?.id, name).toBe(alice.id);
      }
    });

    it('lets anonymous callers introspect but answers UNAUTHENTICATED for any other root field', async () => {
      const intro = await gql(t.url, '{ __typename __type(name: "Post") { name } }');
      expect(intro.body).toMatchObject({ data: { __typename: 'Query', __type: { name: 'Post' } } });
      const res = await gql(t.url, `{ __typename user(id: "${alice.id}") { id } }`);
      expect(res.status).toBe(200);
      expect(res.body.data).toBeUndefined();
      expect(codes(res.body)).toEqual(['UNAUTHENTICATED']);
      const viaFragment = await gql(t.url, 'query { ...Q } fragment Q on Query { me { id } }');
      expect(codes(viaFragment.body)).toEqual(['UNAUTHENTICATED']);
      // the same under application/graphql-response+json is a 401 (a request error in that media type)
      const strict = await gql(t.url, '{ me { id } }', {
        headers: { accept: 'application/graphql-response+json' },
      });
      expect(strict.status).toBe(401);
      expect(strict.headers.get('www-authenticate')).toContain('Bearer');
      expect(codes(strict.body)).toEqual(['UNAUTHENTICATED']);
    });

    it('answers HTTP 401 with WWW-Authenticate and a GraphQL error body for invalid credentials', async () => {
      const invalid: Credentials[] = [
        { bearer: 'not-a-jwt' },
        { basic: [alice.email, 'wrong-password-123'] },
        { apiKey: 'atr_definitely-not-a-key' },
      ];
      for (const auth of invalid) {
        // even for introspection: presented credentials must be valid
        const res = await gql(t.url, '{ __typename }', { auth });
        expect(res.status, JSON.stringify(auth)).toBe(401);
        expect(res.headers.get('www-authenticate')).toBe('Basic realm="atrium", Bearer');
        expect(res.body).toEqual({
          errors: [{ message: 'Invalid credentials', extensions: { code: 'UNAUTHENTICATED' } }],
        });
      }
      const unknownScheme = await gql(t.url, '{ __typename }', {
        headers: { authorization: 'Digest abc' },
      });
      expect(unknownScheme.status).toBe(401);
    });

    it('ignores ?api_key= on POST (credentials in a URL only for GET)', async () => {
      const key = await createApiKey(alice.client);
      const res = await gql(t.url, '{ me { id } }', {
        method: 'POST',
        headers: {},
        query: { api_key: key.key },
      });
      expect(codes(res.body)).toEqual(['UNAUTHENTICATED']);
    });

    it('refuses a GET with Basic credentials and no preflight header (CSRF), accepts it with one', async () => {
      const basic: Credentials = { basic: [alice.email, alice.password] };
      const blocked = await gql(t.url, '{ me { id } }', { method: 'GET', auth: basic });
      expect(blocked.status).toBe(400);
      expect(codes(blocked.body)).toEqual(['BAD_REQUEST']);
      const ok = await gql(t.url, '{ me { id } }', {
        method: 'GET',
        auth: basic,
        headers: { 'apollo-require-preflight': 'true' },
      });
      expect(ok.body.data).toEqual({ me: { id: alice.id } });
      const bearer = await gql(t.url, '{ me { id } }', {
        method: 'GET',
        auth: { bearer: alice.token },
      });
      expect(bearer.body.data).toEqual({ me: { id: alice.id } });
    });
  });

  describe('@auth and field-level refusals', () => {
    it('returns FORBIDDEN for an @auth(requires: ADMIN) field with the field null and the rest of the data', async () => {
      for (const who of [alice, guest]) {
        const res = await gql(t.url, '{ me { id } admins { id permissions } }', {
          auth: { bearer: who.token },
        });
        expect(res.status).toBe(200);
        expect(res.body.data).toEqual({ me: { id: who.id }, admins: null });
        expect(res.body.errors).toEqual([
          expect.objectContaining({ path: ['admins'], extensions: { code: 'FORBIDDEN' } }),
        ]);
      }
      const asAdmin = await gql(t.url, '{ admins { id name email permissions } }', { auth: admin });
      expect(asAdmin.body.errors).toBeUndefined();
      expect(asAdmin.body.data.admins).toEqual([
        expect.objectContaining({
          email: ADMIN_EMAIL,
          permissions: expect.arrayContaining(['users:create']),
        }),
      ]);
    });

    it('shows the @auth directive where it is used in the printed SDL of the schema', async () => {
      const sdl = readFileSync(new URL('../schema.graphql', import.meta.url), 'utf8');
      const live = printSchemaWithDirectives(
        lexicographicSortSchema(t.app.get(GraphQLSchemaHost).schema),
      );
      // the order of a type's directives follows the order their decorators were first loaded in
      // this process (files share one module graph): compared sorted, line by line
      expect(
        directivesSorted(sdl),
        'schema.graphql is stale: run npm run schema:print and commit it',
      ).toBe(directivesSorted(`${live.trim()}\n`));
      expect(sdl).toMatch(/admins: \[Admin!\] @auth\(requires: ADMIN, scopes: \["users:read"\]\)/);
      expect(sdl).toMatch(
        /directive @auth\(requires: Role, scopes: \[String!\]\) on FIELD_DEFINITION \| OBJECT/,
      );
      expect(sdl).toMatch(
        /content: String! @cost\(weight: 20\) @deprecated\(reason: "Use `body`\."\)/,
      );
      expect(sdl).toMatch(/@cost\(weight: 100\)/);
      expect(sdl).toMatch(
        /type User implements Node @auth\(scopes: \["users:read"\]\) @cacheControl\(maxAge: 30\)/,
      );
    });

    it('shows an email only to its owner and to ADMINs (null for everyone else, without an error)', async () => {
      const q = `{ a: user(id: "${alice.id}") { email } b: user(id: "${bob.id}") { email } }`;
      const asAlice = await gql(t.url, q, { auth: { bearer: alice.token } });
      expect(asAlice.body).toMatchObject({
        data: { a: { email: alice.email }, b: { email: null } },
      });
      expect(asAlice.body.errors).toBeUndefined();
      const asAdmin = await gql(t.url, q, { auth: admin });
      expect(asAdmin.body.data).toEqual({ a: { email: alice.email }, b: { email: bob.email } });
    });
  });

  describe('Cache-Control from @cacheControl', () => {
    it('uses the most restrictive hint of the fields resolved, private for authenticated callers', async () => {
      const user = await gql(t.url, `{ user(id: "${alice.id}") { id name } }`, { auth: admin });
      expect(user.headers.get('cache-control')).toBe('max-age=30, private');
      const post = await gql(t.url, `{ post(id: "${alicePost}") { title } }`, { auth: admin });
      expect(post.headers.get('cache-control')).toBe('max-age=60, private');
      const both = await gql(t.url, `{ post(id: "${alicePost}") { title author { name } } }`, {
        auth: admin,
      });
      expect(both.headers.get('cache-control')).toBe('max-age=30, private');
      const list = await gql(
        t.url,
        '{ users(first: 2) { edges { node { name } } pageInfo { hasNextPage } } }',
        {
          auth: admin,
        },
      );
      expect(list.headers.get('cache-control')).toBe('max-age=30, private');
    });

    it('answers no-store for private data (email, me), errors and mutations', async () => {
      const email = await gql(t.url, `{ user(id: "${alice.id}") { id email } }`, { auth: admin });
      expect(email.headers.get('cache-control')).toBe('no-store');
      const me = await gql(t.url, '{ me { id } }', { auth: admin });
      expect(me.headers.get('cache-control')).toBe('no-store');
      const missing = await gql(t.url, '{ user(id: "usr_nope") { id } }', { auth: admin });
      expect(missing.headers.get('cache-control')).toBe('no-store');
      const mutation = await gql(
        t.url,
        `mutation { updateUser(id: "${bob.id}", name: "Bob Builder") { id } }`,
        {
          auth: admin,
        },
      );
      expect(mutation.body.errors).toBeUndefined();
      expect(mutation.headers.get('cache-control')).toBe('no-store');
    });
  });

  describe('query cost and depth', () => {
    it('reports the computed cost: 1 per field (scalars too), lists times first/last (default 20), @cost replaces', async () => {
      // introspection: a tenth of a point per field, lists as long as the schema's on average
      const types = Object.values(t.app.get(GraphQLSchemaHost).schema.getTypeMap());
      const fields = types.reduce(
        (n, type) =>
          n +
          (isObjectType(type) || isInterfaceType(type) ? Object.keys(type.getFields()).length : 0),
        0,
      );
      const cases: [string, number][] = [
        ['{ me { id name } }', 1 + 2],
        [
          '{ users(first: 10) { nodes { id posts(first: 5) { nodes { id } } } } }',
          1 + 10 * (1 + 1 + (1 + 5 * (1 + 1))),
        ],
        ['{ users { totalCount } }', 1 + 1],
        ['{ users(first: 7) { totalCount nodes { id } } }', 1 + 1 + 7 * (1 + 1)],
        ['{ users { edges { node { id } } } }', 1 + 20 * (1 + (1 + 1))],
        ['{ posts(first: 3) { id author { id } } }', 1 + 3 * (1 + (1 + 1))],
        ['{ posts(first: 3) { id body } }', 1 + 3 * (1 + 20)],
        ['{ search(term: "a", first: 5) { __typename } }', 100],
        [
          '{ __schema { types { name fields { name } } } }',
          Math.ceil((1 + 1 + types.length * (1 + 1) + fields * 1) / 10),
        ],
      ];
      for (const [query, expected] of cases) {
        const res = await gql(t.url, query, { auth: admin });
        expect(res.body.errors, query).toBeUndefined();
        expect(res.body.extensions?.cost, query).toMatchObject({
          requested: expected,
          limit: 1000,
        });
      }
    });

    it('refuses an operation over 1000 points with QUERY_TOO_COMPLEX before running anything', async () => {
      const sql = sqlCounter(t);
      try {
        const query = '{ users(first: 100) { nodes { id posts(first: 100) { nodes { id } } } } }';
        const res = await gql(t.url, query, { auth: admin });
        expect(res.status).toBe(200);
        expect(res.body.data).toBeUndefined();
        expect(res.body.errors).toEqual([
          expect.objectContaining({
            extensions: expect.objectContaining({ code: 'QUERY_TOO_COMPLEX' }),
          }),
        ]);
        expect(res.body.extensions?.cost?.requested).toBe(1 + 100 * (1 + 1 + (1 + 100 * 2)));
        // only the credential check touched the database: no resolver ran
        expect(
          sql.statements.filter(
            (s) => /from (users|posts)\b/i.test(s) && !/role FROM users WHERE id/i.test(s),
          ),
        ).toEqual([]);
        const strict = await gql(t.url, query, {
          auth: admin,
          headers: { accept: 'application/graphql-response+json' },
        });
        expect(strict.status).toBe(400);
        expect(codes(strict.body)).toEqual(['QUERY_TOO_COMPLEX']);
      } finally {
        sql.restore();
      }
    });

    it('takes first/last from variables when computing the cost', async () => {
      const q =
        'query($n: Int) { users(first: $n) { nodes { posts(first: $n) { nodes { id } } } } }';
      const ok = await gql(t.url, q, { auth: admin, variables: { n: 5 } });
      expect(ok.body.extensions?.cost?.requested).toBe(1 + 5 * (1 + (1 + 5 * 2)));
      const tooMuch = await gql(t.url, q, { auth: admin, variables: { n: 50 } });
      expect(codes(tooMuch.body)).toEqual(['QUERY_TOO_COMPLEX']);
    });

    it('allows depth 12 and refuses depth 13', async () => {
      const nest = (levels: number): string => {
        // me(1) posts(2) nodes(3) author(4) posts(5) ... : three levels per round
        let inner = 'id';
        let q = '';
        const parts = ['posts(first: 1)', 'nodes', 'author'];
        const fields: string[] = ['me'];
        for (let i = 0; fields.length < levels - 1; i++) {
          fields.push(parts[i % 3]);
        }
        if (fields[fields.length - 1] === 'posts(first: 1)') {
          inner = 'totalCount';
        }
        q = fields.map((f) => `${f} {`).join(' ') + ` ${inner} ` + '}'.repeat(fields.length);
        return `{ ${q} }`;
      };
      const ok = await gql(t.url, nest(12), { auth: admin });
      expect(ok.body.errors, nest(12)).toBeUndefined();
      const deep = await gql(t.url, nest(13), { auth: admin });
      expect(deep.body.data).toBeUndefined();
      expect(deep.body.errors).toEqual([
        expect.objectContaining({
          message: 'Query depth exceeds the maximum of 12',
          extensions: expect.objectContaining({ code: 'QUERY_TOO_COMPLEX' }),
        }),
      ]);
    });
  });

  describe('errors', () => {
    it('NOT_FOUND for unknown, malformed and other-type ids (field null, rest of data kept)', async () => {
      const res = await gql(
        t.url,
        `{ me { id } a: user(id: "usr_01ZZZZZZZZZZZZZZZZZZZZZZZZ") { id } b: user(id: "bogus") { id } c: user(id: "${alicePost}") { id } d: node(id: "key_x") { id } }`,
        { auth: admin },
      );
      expect(res.body.data).toEqual({
        me: { id: expect.any(String) },
        a: null,
        b: null,
        c: null,
        d: null,
      });
      expect(codes(res.body)).toEqual(['NOT_FOUND', 'NOT_FOUND', 'NOT_FOUND', 'NOT_FOUND']);
    });

    it('BAD_USER_INPUT with details for input rules, and no "Did you mean" hints', async () => {
      const res = await gql(
        t.url,
        'mutation { createUser(input: { name: "", email: "not-an-email" }) { id } }',
        { auth: admin },
      );
      expect(res.body.data).toEqual({ createUser: null });
      const [error] = res.body.errors!;
      expect(error.extensions!.code).toBe('BAD_USER_INPUT');
      expect(error.extensions!.details).toEqual(
        expect.arrayContaining([
          expect.objectContaining({ field: 'name' }),
          expect.objectContaining({
            field: 'email',
            message: 'email must be a valid email address',
          }),
        ]),
      );
      const typo = await gql(t.url, '{ usr(id: "x") { id } }', { auth: admin });
      expect(codes(typo.body)).toEqual(['GRAPHQL_VALIDATION_FAILED']);
      expect(typo.body.errors![0].message).not.toMatch(/Did you mean/);
      expect(JSON.stringify(typo.body)).not.toMatch(/stacktrace|\bat .*\.js/);
      const coercion = await gql(t.url, 'query($id: ID!) { user(id: $id) { id } }', {
        auth: admin,
        variables: {},
      });
      expect(codes(coercion.body)).toEqual(['BAD_USER_INPUT']);
      const paging = await gql(t.url, '{ users(first: 101) { totalCount } }', { auth: admin });
      expect(paging.body.errors![0].extensions).toMatchObject({
        code: 'BAD_USER_INPUT',
        details: [{ field: 'first', message: expect.any(String) }],
      });
    });

    it('CONFLICT for a duplicate email', async () => {
      const res = await gql(
        t.url,
        `mutation { createUser(input: { name: "Dup", email: "${alice.email.toUpperCase()}" }) { id } }`,
        {
          auth: admin,
        },
      );
      expect(res.body.errors![0].extensions).toMatchObject({
        code: 'CONFLICT',
        details: [{ field: 'email' }],
      });
    });

    it('FORBIDDEN from the service permission matrix (USER creating a user, changing a role, editing another user)', async () => {
      const create = await gql(t.url, 'mutation { createUser(name: "Nope") { id } }', {
        auth: { bearer: alice.token },
      });
      expect(codes(create.body)).toEqual(['FORBIDDEN']);
      const role = await gql(
        t.url,
        `mutation { updateUser(id: "${alice.id}", input: { role: ADMIN }) { id } }`,
        {
          auth: { bearer: alice.token },
        },
      );
      expect(codes(role.body)).toEqual(['FORBIDDEN']);
      const other = await gql(
        t.url,
        `mutation { updateUser(id: "${bob.id}", name: "Hacked") { id } }`,
        {
          auth: { bearer: alice.token },
        },
      );
      expect(codes(other.body)).toEqual(['FORBIDDEN']);
    });
  });

  describe('mutations', () => {
    it('createUser(input:) and the short form createUser(name:) (exactly one form)', async () => {
      const email = `${unique()}@example.com`;
      const full = await gql(
        t.url,
        'mutation($in: CreateUserInput!) { createUser(input: $in) { id name email role age } }',
        { auth: admin, variables: { in: { name: '  Carol  ', email, age: 41, role: 'GUEST' } } },
      );
      expect(full.body.data.createUser).toEqual({
        id: expect.stringMatching(/^usr_/),
        name: 'Carol',
        email,
        role: 'GUEST',
        age: 41,
      });
      const short = await gql(
        t.url,
        'mutation { createUser(name: "Dora") { id name email role } }',
        { auth: admin },
      );
      expect(short.body.data.createUser).toMatchObject({ name: 'Dora', email: null, role: 'USER' });
      const rest = await alice.client.get(`/api/v1/users/${short.body.data.createUser.id}`);
      expect(rest.body.data.name).toBe('Dora'); // REST and GraphQL share the service and the rows
      const both = await gql(
        t.url,
        `mutation { createUser(name: "X", input: { name: "Y", email: "${unique()}@e.io" }) { id } }`,
        {
          auth: admin,
        },
      );
      expect(codes(both.body)).toEqual(['BAD_USER_INPUT']);
      const neither = await gql(t.url, 'mutation { createUser { id } }', { auth: admin });
      expect(codes(neither.body)).toEqual(['BAD_USER_INPUT']);
    });

    it('updateUser(id, name) and updateUser(id, input) for oneself', async () => {
      const carl = await createUser(t.url, { name: 'Carl' });
      const byName = await gql(
        t.url,
        `mutation { updateUser(id: "${carl.id}", name: "Carl II") { id name updatedAt } }`,
        {
          auth: { bearer: carl.token },
        },
      );
      expect(byName.body.data.updateUser).toMatchObject({ id: carl.id, name: 'Carl II' });
      const byInput = await gql(
        t.url,
        `mutation { updateUser(id: "${carl.id}", input: { age: 5 }) { name age } }`,
        {
          auth: { bearer: carl.token },
        },
      );
      expect(byInput.body.data.updateUser).toEqual({ name: 'Carl II', age: 5 });
      const stored = await carl.client.get(`/api/v1/users/${carl.id}`);
      expect(stored.body.data).toMatchObject({ name: 'Carl II', age: 5 });
    });

    it('deleteUser returns the deleted user, then null (idempotent); the user is gone from reads', async () => {
      const victim = await createUser(t.url, { name: 'Temp' });
      const first = await gql(t.url, `mutation { deleteUser(id: "${victim.id}") { id name } }`, {
        auth: admin,
      });
      expect(first.body.data.deleteUser).toEqual({ id: victim.id, name: 'Temp' });
      const again = await gql(t.url, `mutation { deleteUser(id: "${victim.id}") { id } }`, {
        auth: admin,
      });
      expect(again.body).toMatchObject({ data: { deleteUser: null } });
      expect(again.body.errors).toBeUndefined();
      const read = await gql(t.url, `{ user(id: "${victim.id}") { id } }`, { auth: admin });
      expect(codes(read.body)).toEqual(['NOT_FOUND']);
    });

    it('bulkCreate creates all or nothing (<= 100) and names the failing index', async () => {
      const emails = [unique(), unique(), unique()].map((u) => `${u}@example.com`);
      const ok = await gql(
        t.url,
        'mutation($in: [CreateUserInput!]!) { bulkCreate(input: $in) { id name } }',
        {
          auth: admin,
          variables: { in: emails.map((email, i) => ({ name: `Bulk ${i}`, email })) },
        },
      );
      expect(ok.body.data.bulkCreate.map((u: { name: string }) => u.name)).toEqual([
        'Bulk 0',
        'Bulk 1',
        'Bulk 2',
      ]);

      const fresh = `${unique()}@example.com`;
      const bad = await gql(
        t.url,
        'mutation($in: [CreateUserInput!]!) { bulkCreate(input: $in) { id } }',
        {
          auth: admin,
          variables: {
            in: [
              { name: 'Fine', email: fresh },
              { name: 'Broken', email: 'nope' },
            ],
          },
        },
      );
      expect(bad.body.errors![0].extensions).toMatchObject({
        code: 'BAD_USER_INPUT',
        details: [{ index: 1, field: 'email', message: expect.any(String) }],
      });
      const p = t.app.get(DataSource).options.type === 'postgres' ? '$1' : '?';
      const rows = await t.app
        .get(DataSource)
        .query(`SELECT id FROM users WHERE email = ${p}`, [fresh]);
      expect(rows).toEqual([]); // nothing written

      const tooMany = await gql(
        t.url,
        'mutation($in: [CreateUserInput!]!) { bulkCreate(input: $in) { id } }',
        {
          auth: admin,
          variables: {
            in: Array.from({ length: 101 }, (_, i) => ({
              name: `N${i}`,
              email: `${unique()}@e.io`,
            })),
          },
        },
      );
      expect(codes(tooMany.body)).toEqual(['BAD_USER_INPUT']);
      const asUser = await gql(
        t.url,
        'mutation { bulkCreate(input: [{ name: "x", email: "x@example.com" }]) { id } }',
        {
          auth: { bearer: alice.token },
        },
      );
      expect(codes(asUser.body)).toEqual(['FORBIDDEN']);
    });

    it('refuses by the declared floor: bulkCreate needs ADMIN (even an empty list), updateUser and deleteUser USER; nothing changed', async () => {
      for (const who of [alice, guest]) {
        const res = await gql(t.url, 'mutation { bulkCreate(input: []) { id } }', {
          auth: { bearer: who.token },
        });
        expect(res.body.data?.bulkCreate ?? null, who.id).toBeNull();
        expect(codes(res.body), who.id).toEqual(['FORBIDDEN']);
      }
      const unknown = 'usr_01ARZ3NDEKTSV4RRFFQ69G5FAV';
      for (const target of [guest.id, unknown]) {
        for (const args of ['name: "Nope"', 'name: ""', 'input: { age: -1 }']) {
          const res = await gql(t.url, `mutation { updateUser(id: "${target}", ${args}) { id } }`, {
            auth: { bearer: guest.token },
          });
          expect(res.body.data?.updateUser ?? null, `${target} ${args}`).toBeNull();
          expect(codes(res.body), `${target} ${args}`).toEqual(['FORBIDDEN']);
        }
        const del = await gql(t.url, `mutation { deleteUser(id: "${target}") { id } }`, {
          auth: { bearer: guest.token },
        });
        expect(del.body.data?.deleteUser ?? null, target).toBeNull();
        expect(codes(del.body), target).toEqual(['FORBIDDEN']);
      }
      const me = await gql(t.url, '{ me { id name } }', { auth: { bearer: guest.token } });
      expect(me.body.data.me).toEqual({ id: guest.id, name: 'Gus Guest' });
    });

    it('createPost / updatePost / deletePost with the posts permission rules', async () => {
      const created = await gql(
        t.url,
        'mutation { createPost(input: { title: " Bob post ", body: "b" }) { id title author { id } } }',
        {
          auth: { bearer: bob.token },
        },
      );
      const id = created.body.data.createPost.id as string;
      expect(created.body.data.createPost).toEqual({
        id,
        title: 'Bob post',
        author: { id: bob.id },
      });
      const asGuest = await gql(
        t.url,
        'mutation { createPost(input: { title: "g", body: "" }) { id } }',
        {
          auth: { bearer: guest.token },
        },
      );
      expect(codes(asGuest.body)).toEqual(['FORBIDDEN']);
      const notOwner = await gql(
        t.url,
        `mutation { updatePost(id: "${id}", input: { title: "mine" }) { id } }`,
        {
          auth: { bearer: alice.token },
        },
      );
      expect(codes(notOwner.body)).toEqual(['FORBIDDEN']);
      const invalid = await gql(
        t.url,
        `mutation { updatePost(id: "${id}", input: { title: "" }) { id } }`,
        {
          auth: { bearer: bob.token },
        },
      );
      expect(invalid.body.errors![0].extensions).toMatchObject({
        code: 'BAD_USER_INPUT',
        details: [{ field: 'title' }],
      });
      const owner = await gql(
        t.url,
        `mutation { updatePost(id: "${id}", input: { body: "new" }) { title body } }`,
        {
          auth: { bearer: bob.token },
        },
      );
      expect(owner.body.data.updatePost).toEqual({ title: 'Bob post', body: 'new' });
      const rest = await bob.client.get(`/api/v1/posts/${id}`);
      expect(rest.body.data).toMatchObject({ body: 'new', author_id: bob.id });
      const del = await gql(t.url, `mutation { deletePost(id: "${id}") { id } }`, { auth: admin });
      expect(del.body.data.deletePost).toEqual({ id });
      const gone = await gql(t.url, `{ post(id: "${id}") { id } }`, { auth: admin });
      expect(codes(gone.body)).toEqual(['NOT_FOUND']);
    });

    it('updatePost / deletePost refuse a GUEST by the declared floor (@auth requires USER): FORBIDDEN even for invalid input or an unknown post, nothing changed', async () => {
      const created = await gql(
        t.url,
        'mutation { createPost(input: { title: "Kept", body: "b" }) { id } }',
        { auth: { bearer: bob.token } },
      );
      const id = created.body.data.createPost.id as string;
      const unknown = 'pst_01ZZZZZZZZZZZZZZZZZZZZZZZZ';
      for (const target of [id, unknown]) {
        for (const input of ['{ title: "G" }', '{ title: "" }', '{ body: "x" }']) {
          const res = await gql(
            t.url,
            `mutation { updatePost(id: "${target}", input: ${input}) { id } }`,
            { auth: { bearer: guest.token } },
          );
          expect(res.body.data?.updatePost ?? null, `${target} ${input}`).toBeNull();
          expect(codes(res.body), `${target} ${input}`).toEqual(['FORBIDDEN']);
        }
        const del = await gql(t.url, `mutation { deletePost(id: "${target}") { id } }`, {
          auth: { bearer: guest.token },
        });
        expect(del.body.data?.deletePost ?? null, target).toBeNull();
        expect(codes(del.body), target).toEqual(['FORBIDDEN']);
      }
      const rest = await bob.client.get(`/api/v1/posts/${id}`);
      expect(rest.status).toBe(200);
      expect(rest.body.data).toMatchObject({ title: 'Kept', body: 'b' });
    });
  });
});
