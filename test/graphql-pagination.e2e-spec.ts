import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_EMAIL, ADMIN_PASSWORD, startApp, type TestApp } from './helpers/app.js';
import { createUser, tokenFor, type CreatedUser } from './helpers/factories.js';
import type { Credentials } from './helpers/http.js';
import { codes, gql } from './graphql-client.js';

interface Page {
  edges: { cursor: string; node: { id: string; name: string } }[];
  nodes: { id: string }[];
  pageInfo: {
    hasNextPage: boolean;
    hasPreviousPage: boolean;
    startCursor: string | null;
    endCursor: string | null;
  };
  totalCount: number;
}

const PAGE = `edges { cursor node { id name } } nodes { id }
  pageInfo { hasNextPage hasPreviousPage startCursor endCursor } totalCount`;

describe('GraphQL connections and cursors', () => {
  let t: TestApp;
  let admin: Credentials;
  let guests: CreatedUser[];
  let writer: CreatedUser;
  let postIds: string[];

  async function guestPage(args: string): Promise<Page> {
    const res = await gql(t.url, `{ users(role: GUEST, ${args}) { ${PAGE} } }`, { auth: admin });
    expect(res.body.errors, args).toBeUndefined();
    return res.body.data.users as Page;
  }

  beforeAll(async () => {
    t = await startApp();
    admin = { bearer: await tokenFor(t.url, ADMIN_EMAIL, ADMIN_PASSWORD) };
    guests = [];
    // names out of creation order, so that NAME ordering differs from CREATED_AT ordering
    for (const name of ['Gina', 'Carl', 'Eve', 'Abe', 'Fay', 'Dan', 'Bea']) {
      guests.push(await createUser(t.url, { name, role: 'GUEST' }));
    }
    writer = await createUser(t.url, { name: 'Writer' });
    postIds = [];
    for (let i = 0; i < 5; i++) {
      const res = await gql(
        t.url,
        `mutation { createPost(input: { title: "P${i}", body: "" }) { id } }`,
        {
          auth: { bearer: writer.token },
        },
      );
      postIds.push(res.body.data.createPost.id);
    }
  });
  afterAll(async () => {
    await t.close();
  });

  it('pages forwards with first/after across every page', async () => {
    const p1 = await guestPage('first: 3');
    expect(p1.edges.map((e) => e.node.name)).toEqual(['Gina', 'Carl', 'Eve']);
    expect(p1.nodes.map((n) => n.id)).toEqual(p1.edges.map((e) => e.node.id));
    expect(p1.pageInfo).toMatchObject({ hasNextPage: true, hasPreviousPage: false });
    expect(p1.pageInfo.startCursor).toBe(p1.edges[0].cursor);
    expect(p1.pageInfo.endCursor).toBe(p1.edges[2].cursor);
    expect(p1.totalCount).toBe(7);

    const p2 = await guestPage(`first: 3, after: "${p1.pageInfo.endCursor}"`);
    expect(p2.edges.map((e) => e.node.name)).toEqual(['Abe', 'Fay', 'Dan']);
    expect(p2.pageInfo).toMatchObject({ hasNextPage: true, hasPreviousPage: true });

    const p3 = await guestPage(`first: 3, after: "${p2.pageInfo.endCursor}"`);
    expect(p3.edges.map((e) => e.node.name)).toEqual(['Bea']);
    expect(p3.pageInfo).toMatchObject({ hasNextPage: false, hasPreviousPage: true });
    expect(p3.totalCount).toBe(7);

    const end = await guestPage(`first: 3, after: "${p3.pageInfo.endCursor}"`);
    expect(end.edges).toEqual([]);
    expect(end.pageInfo).toMatchObject({ hasNextPage: false, startCursor: null, endCursor: null });
  });

  it('pages backwards with last/before across every page', async () => {
    const p1 = await guestPage('last: 3');
    expect(p1.edges.map((e) => e.node.name)).toEqual(['Fay', 'Dan', 'Bea']);
    expect(p1.pageInfo).toMatchObject({ hasNextPage: false, hasPreviousPage: true });

    const p2 = await guestPage(`last: 3, before: "${p1.pageInfo.startCursor}"`);
    expect(p2.edges.map((e) => e.node.name)).toEqual(['Carl', 'Eve', 'Abe']);
    expect(p2.pageInfo).toMatchObject({ hasNextPage: true, hasPreviousPage: true });

    const p3 = await guestPage(`last: 3, before: "${p2.pageInfo.startCursor}"`);
    expect(p3.edges.map((e) => e.node.name)).toEqual(['Gina']);
    expect(p3.pageInfo).toMatchObject({ hasNextPage: true, hasPreviousPage: false });
  });

  it('mixes directions: a cursor from a forward page works as `before`', async () => {
    const forward = await guestPage('first: 4');
    const back = await guestPage(`last: 2, before: "${forward.pageInfo.endCursor}"`);
    expect(back.edges.map((e) => e.node.name)).toEqual(['Carl', 'Eve']);
    const between = await guestPage(
      `first: 10, after: "${forward.edges[0].cursor}", before: "${forward.edges[3].cursor}"`,
    );
    expect(between.edges.map((e) => e.node.name)).toEqual(['Carl', 'Eve']);
  });

  it('keeps its place when rows are inserted between page requests (keyset, not offset)', async () => {
    const p1 = await guestPage('first: 2');
    const newcomer = await createUser(t.url, { name: 'Aaron', role: 'GUEST' });
    try {
      const p2 = await guestPage(`first: 2, after: "${p1.pageInfo.endCursor}"`);
      expect(p2.edges.map((e) => e.node.name)).toEqual(['Eve', 'Abe']);
      expect(p2.totalCount).toBe(8);
    } finally {
      await gql(t.url, `mutation { deleteUser(id: "${newcomer.id}") { id } }`, { auth: admin });
    }
    expect((await guestPage('first: 1')).totalCount).toBe(7); // deleted users leave the connection
  });

  it('orders by NAME (and DESC), with cursors bound to their ordering', async () => {
    const asc = await guestPage('first: 3, orderBy: { field: NAME }');
    expect(asc.edges.map((e) => e.node.name)).toEqual(['Abe', 'Bea', 'Carl']);
    const next = await guestPage(
      `first: 3, after: "${asc.pageInfo.endCursor}", orderBy: { field: NAME }`,
    );
    expect(next.edges.map((e) => e.node.name)).toEqual(['Dan', 'Eve', 'Fay']);
    const desc = await guestPage('first: 2, orderBy: { field: NAME, direction: DESC }');
    expect(desc.edges.map((e) => e.node.name)).toEqual(['Gina', 'Fay']);
    const descNext = await guestPage(
      `first: 2, after: "${desc.pageInfo.endCursor}", orderBy: { field: NAME, direction: DESC }`,
    );
    expect(descNext.edges.map((e) => e.node.name)).toEqual(['Eve', 'Dan']);
    const descBack = await guestPage(
      `last: 2, before: "${descNext.pageInfo.startCursor}", orderBy: { field: NAME, direction: DESC }`,
    );
    expect(descBack.edges.map((e) => e.node.name)).toEqual(['Gina', 'Fay']);

    const wrongOrdering = await gql(
      t.url,
      `{ users(first: 2, after: "${asc.pageInfo.endCursor}") { totalCount } }`,
      { auth: admin },
    );
    expect(wrongOrdering.body.errors![0].extensions).toMatchObject({
      code: 'BAD_USER_INPUT',
      details: [{ field: 'after' }],
    });
  });

  it('rejects bad paging arguments with BAD_USER_INPUT naming the argument', async () => {
    const cases: [string, string][] = [
      ['first: -1', 'first'],
      ['first: 101', 'first'],
      ['last: 500', 'last'],
      ['first: 1, last: 1', 'last'],
      ['after: "not-a-cursor"', 'after'],
      ['before: "eyJ4IjoxfQ"', 'before'],
    ];
    for (const [args, field] of cases) {
      const res = await gql(t.url, `{ users(${args}) { totalCount } }`, { auth: admin });
      expect(res.body.data, args).toBeNull();
      expect(res.body.errors![0].extensions, args).toMatchObject({
        code: 'BAD_USER_INPUT',
        details: [{ field }],
      });
    }
    const zero = await guestPage('first: 0');
    expect(zero.edges).toEqual([]);
    expect(zero.pageInfo.hasNextPage).toBe(true);
  });

  it('pages User.posts forwards with cursors', async () => {
    const q = (args: string) =>
      gql(
        t.url,
        `{ user(id: "${writer.id}") { posts(${args}) { ${PAGE.replace('node { id name }', 'node { id }')} } } }`,
        {
          auth: admin,
        },
      );
    const p1 = (await q('first: 2')).body.data.user.posts;
    expect(p1.nodes.map((n: { id: string }) => n.id)).toEqual(postIds.slice(0, 2));
    expect(p1.pageInfo).toMatchObject({ hasNextPage: true, hasPreviousPage: false });
    expect(p1.totalCount).toBe(5);
    const p2 = (await q(`first: 2, after: "${p1.pageInfo.endCursor}"`)).body.data.user.posts;
    expect(p2.nodes.map((n: { id: string }) => n.id)).toEqual(postIds.slice(2, 4));
    expect(p2.pageInfo).toMatchObject({ hasNextPage: true, hasPreviousPage: true });
    const p3 = (await q(`first: 2, after: "${p2.pageInfo.endCursor}"`)).body.data.user.posts;
    expect(p3.nodes.map((n: { id: string }) => n.id)).toEqual(postIds.slice(4));
    expect(p3.pageInfo).toMatchObject({ hasNextPage: false, hasPreviousPage: true });
    const other = await gql(
      t.url,
      `{ user(id: "${writer.id}") { posts(after: "${(await guestPage('first: 1')).pageInfo.endCursor}") { totalCount } } }`,
      {
        auth: admin,
      },
    );
    expect(codes(other.body)).toEqual(['BAD_USER_INPUT']); // a users cursor is not a posts cursor
  });

  it('pages the plain posts list with first/after (a post id), capped at 100', async () => {
    const mine = async (args: string) => {
      const res = await gql(t.url, `{ posts(${args}) { id title author { id } } }`, {
        auth: admin,
      });
      return res.body;
    };
    const first = await mine('first: 2');
    expect(first.data.posts.map((p: { id: string }) => p.id)).toEqual(postIds.slice(0, 2));
    const next = await mine(`first: 2, after: "${postIds[1]}"`);
    expect(next.data.posts.map((p: { id: string }) => p.id)).toEqual(postIds.slice(2, 4));
    expect(next.data.posts[0].author).toEqual({ id: writer.id });
    expect(codes(await mine('first: 101'))).toEqual(['BAD_USER_INPUT']);
    expect(codes(await mine('after: "usr_nope"'))).toEqual(['BAD_USER_INPUT']);
  });
});
