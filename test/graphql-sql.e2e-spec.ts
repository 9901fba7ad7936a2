import { DataSource } from 'typeorm';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { ADMIN_EMAIL, ADMIN_PASSWORD, startApp, type TestApp } from './helpers/app.js';
import { createApiKey, createUser, tokenFor } from './helpers/factories.js';
import { client, type Credentials } from './helpers/http.js';
import { gql, sqlCounter } from './graphql-client.js';

/**
 * No N+1 (docs/graphql.md, DataLoaders): the number of SQL statements of a page does not grow with the page
 * size. Statements are counted at TypeORM's query hook, which every statement of both drivers passes.
 */
describe('GraphQL batching (SQL statements per request)', () => {
  let t: TestApp;
  let auth: Credentials;
  let counter: ReturnType<typeof sqlCounter>;

  async function statementsFor(query: string): Promise<string[]> {
    counter.reset();
    const res = await gql(t.url, query, { auth });
    expect(res.body.errors, query).toBeUndefined();
    // the API key's last_used_at is written once a minute, in a transaction of its own, whenever a
    // request happens to land on that minute: bookkeeping, not part of any page's statements
    return counter.statements.filter(
      (s) =>
        !/^\s*(START TRANSACTION|BEGIN|COMMIT|ROLLBACK)\b/i.test(s) &&
        !/UPDATE api_keys SET last_used_at/i.test(s),
    );
  }

  beforeAll(async () => {
    t = await startApp();
    const adminToken = await tokenFor(t.url, ADMIN_EMAIL, ADMIN_PASSWORD);
    // an API key: the credential check is one statement, identical for every request
    auth = { apiKey: (await createApiKey(client(t.url, { bearer: adminToken }))).key };
    for (let i = 0; i < 24; i++) {
      const user = await createUser(t.url, { name: `Author ${String(i).padStart(2, '0')}` });
      for (let j = 0; j < 2; j++) {
        const res = await gql(
          t.url,
          `mutation { createPost(input: { title: "T${i}.${j}", body: "b" }) { id } }`,
          {
            auth: { bearer: user.token },
          },
        );
        expect(res.body.errors).toBeUndefined();
      }
    }
    // the key's first use records last_used_at (once a minute): get that write out of the way
    await gql(t.url, '{ me { id } }', { auth });
    const ds = t.app.get(DataSource);
    await vi.waitFor(
      async () => {
        const [row] = await ds.query<{ n: number | string }[]>(
          'SELECT COUNT(*) AS n FROM api_keys WHERE last_used_at IS NOT NULL',
        );
        expect(Number(row?.n)).toBe(1);
      },
      { timeout: 5_000, interval: 10 },
    );
    counter = sqlCounter(t);
  });
  afterAll(async () => {
    counter.restore();
    await t.close();
  });

  it('users { edges { node { posts { ... author } } } } runs the same statements for 2, 5 and 20 users', async () => {
    const query = (n: number) => `{ users(first: ${n}) { totalCount edges { node { id name
      posts(first: 3) { totalCount pageInfo { hasNextPage } nodes { id title author { id name } } } } } } }`;
    const small = await statementsFor(query(2));
    const medium = await statementsFor(query(5));
    const large = await statementsFor(query(20));
    expect(large.length).toBe(small.length);
    expect(medium.length).toBe(small.length);
    // credential check, users page, users count, posts page (all authors at once), posts counts;
    // authors come from the users page already loaded
    expect(large.length).toBeLessThanOrEqual(5);
    expect(large.filter((s) => /FROM posts/i.test(s) && !/COUNT/i.test(s))).toHaveLength(1);
    // the totalCounts are one read of the list counters for all authors
    expect(large.filter((s) => /FROM list_counts/i.test(s))).toHaveLength(2);
  });

  it('posts { author { ... } } runs the same statements for 2 and 40 posts', async () => {
    const small = await statementsFor('{ posts(first: 2) { id author { id name } } }');
    const large = await statementsFor('{ posts(first: 40) { id author { id name } } }');
    expect(large.length).toBe(small.length);
    expect(large.filter((s) => /FROM users WHERE id IN/i.test(s))).toHaveLength(1);
    expect(large.length).toBeLessThanOrEqual(3);
  });

  it('the search union and node() batch their users too', async () => {
    const small = await statementsFor(
      '{ search(term: "T1", first: 2) { ... on Post { author { name } } } }',
    );
    const large = await statementsFor(
      '{ search(term: "T", first: 40) { ... on Post { author { name } } } }',
    );
    expect(large.length).toBe(small.length);
    // node(): posts fetched by id under aliases
    const postIds = (await gql(t.url, '{ posts(first: 8) { id } }', { auth })).body.data.posts.map(
      (p: { id: string }) => p.id,
    ) as string[];
    expect(postIds).toHaveLength(8);
    const nodes = (ids: string[]) =>
      '{ ' +
      ids
        .map((id, i) => `n${i}: node(id: "${id}") { id ... on Post { author { id name } } }`)
        .join(' ') +
      ' }';
    const twoNodes = await statementsFor(nodes(postIds.slice(0, 2)));
    const eightNodes = await statementsFor(nodes(postIds));
    // node() fields of one request read their posts through one loader, and the posts' authors too
    expect(eightNodes.length).toBe(twoNodes.length);
    const posts = (st: string[]) => st.filter((s) => /FROM posts WHERE id IN/i.test(s));
    const authors = (st: string[]) => st.filter((s) => /FROM users WHERE id IN/i.test(s));
    expect(posts(eightNodes)).toHaveLength(1);
    expect(authors(twoNodes)).toHaveLength(1);
    expect(authors(eightNodes)).toHaveLength(1);
  });

  it('counts real statements (the counter sees a query without batching grow)', async () => {
    // sanity check of the instrument: aliases of user(id) are separate root fields, one statement each
    const ids = (
      await gql(t.url, '{ users(first: 3) { nodes { id } } }', { auth })
    ).body.data.users.nodes.map((n: { id: string }) => n.id) as string[];
    const one = await statementsFor(`{ a: user(id: "${ids[0]}") { id } }`);
    const three = await statementsFor(
      ids
        .map((id, i) => `u${i}: user(id: "${id}") { id }`)
        .join(' ')
        .replace(/^/, '{ ') + ' }',
    );
    expect(three.length).toBe(one.length + 2);
  });
});
