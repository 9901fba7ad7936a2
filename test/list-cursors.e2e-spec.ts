import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { gql } from './graphql-client.js';
import { ADMIN_EMAIL, ADMIN_PASSWORD, PUBLIC_URL, startApp, type TestApp } from './helpers/app.js';
import {
  adminClient,
  createUser,
  tokenFor,
  unique,
  type CreatedUser,
} from './helpers/factories.js';
import type { Client } from './helpers/http.js';

/** The URL of `rel` in a Link header, relative to the public URL (or undefined). */
function linkOf(header: string | null, rel: string): string | undefined {
  for (const part of (header ?? '').split(', ')) {
    const m = /^<([^>]+)>; rel="([^"]+)"$/.exec(part);
    if (m && m[2] === rel) {
      return m[1].slice(PUBLIC_URL.length);
    }
  }
  return undefined;
}

/** Follows rel="next" from `path` to the end: ids in order, and each page's meta. */
async function followNext(c: Client, path: string) {
  const ids: string[] = [];
  const metas: { page: number | null; limit: number; total: number }[] = [];
  let next: string | undefined = path;
  while (next) {
    const res = await c.get(next);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    ids.push(...(res.body.data as { id: string }[]).map((r) => r.id));
    metas.push(res.body.meta);
    next = linkOf(res.headers.get('link'), 'next');
  }
  return { ids, metas };
}

/**
 * Keyset pages: `Link: rel="next"` carries a cursor (`?cursor=`), following it walks every row once
 * in the list's order for every documented sort and filter, and page numbers stop at page * limit =
 * 10000 with a 400 that points to the cursor.
 */
describe('list cursors (Link rel="next")', () => {
  let t: TestApp;
  let admin: Client;
  let alice: CreatedUser;
  let roomId: string;

  beforeAll(async () => {
    t = await startApp();
    admin = await adminClient(t.url);
    alice = await createUser(t.url, { name: `Alice ${unique()}` });
    for (let i = 0; i < 7; i++) {
      // equal names: the tie is broken by id, in the direction of the sort
      await createUser(t.url, { name: i % 2 ? 'Same name' : `N ${unique()}`, role: 'GUEST' });
      expect(
        (await alice.client.post('/api/v1/posts', { title: i % 2 ? 'Same' : `T${i}`, body: 'b' }))
          .status,
      ).toBe(201);
      expect(
        (
          await alice.client.post(`/api/v1/users/${alice.id}/orders`, {
            items: [{ sku: 'S-1', quantity: 1, unit_price_cents: 100 }],
            currency: 'EUR',
          })
        ).status,
      ).toBe(201);
      await alice.client.post('/api/v1/rooms', { name: unique('room') });
    }
    const room = await alice.client.post('/api/v1/rooms', { name: unique('chat') });
    roomId = room.body.data.id;
    for (let i = 0; i < 7; i++) {
      await alice.client.post(`/api/v1/rooms/${roomId}/messages`, { content: `m${i}` });
    }
  });
  afterAll(async () => {
    await t.close();
  });

  it.each([
    '/api/v1/users',
    '/api/v1/users?sort=-created_at',
    '/api/v1/users?sort=name',
    '/api/v1/users?sort=-name',
    '/api/v1/users?sort=updated_at',
    '/api/v1/users?sort=name,-created_at',
    '/api/v1/users?role=GUEST&sort=-name',
    '/api/v1/posts',
    '/api/v1/posts?sort=-title',
    '/api/v1/posts?sort=updated_at&author_id=ALICE',
    '/api/v1/users/ALICE/orders',
    '/api/v1/users/ALICE/orders?sort=-created_at&status=pending',
    '/api/v1/rooms?sort=-name',
    '/api/v1/rooms',
    '/api/v1/rooms/ROOM/messages',
    '/api/v1/rooms/ROOM/messages?sort=-created_at',
  ])('following next from %s visits every row once, in order', async (raw) => {
    const path = raw.replace('ALICE', alice.id).replace('ROOM', roomId);
    const sep = path.includes('?') ? '&' : '?';
    const all = await admin.get(`${path}${sep}limit=100`);
    expect(all.status).toBe(200);
    expect(all.body.data.length).toBeGreaterThanOrEqual(7);
    const { ids, metas } = await followNext(admin, `${path}${sep}limit=2`);
    expect(ids).toEqual((all.body.data as { id: string }[]).map((r) => r.id));
    expect(metas.map((m) => m.page)).toEqual(metas.map((_, i) => i + 1));
    expect(new Set(metas.map((m) => m.total))).toEqual(new Set([all.body.meta.total]));
    expect(metas.length).toBe(Math.ceil(all.body.meta.total / 2));
  });

  it('next link keeps the filters and carries cursor and the page it leads to', async () => {
    const res = await admin.get('/api/v1/users?role=GUEST&sort=-name&limit=3');
    const next = linkOf(res.headers.get('link'), 'next')!;
    const params = new URL(next, PUBLIC_URL).searchParams;
    expect(Object.fromEntries(params)).toEqual({
      role: 'GUEST',
      sort: '-name',
      page: '2',
      limit: '3',
      cursor: expect.stringMatching(/^[\w-]+$/),
    });
    expect(linkOf(res.headers.get('link'), 'first')).toBe(
      '/api/v1/users?role=GUEST&sort=-name&limit=3&page=1',
    );
  });

  it('a cursor page is a position: a row deleted before it shifts nothing', async () => {
    // a victim of its own (the newest user), so the GUEST rows other tests page through stay whole
    const victim = (await createUser(t.url)).id;
    const first = await admin.get('/api/v1/users?sort=-created_at&limit=2');
    expect(first.body.data[0].id).toBe(victim);
    const next = linkOf(first.headers.get('link'), 'next')!;
    const expected = (await admin.get(next)).body.data.map((u: { id: string }) => u.id);
    expect((await admin.delete(`/api/v1/users/${victim}`)).status).toBe(204);
    const after = await admin.get(next);
    expect(after.body.data.map((u: { id: string }) => u.id)).toEqual(expected);
    expect(after.body.meta.total).toBe(first.body.meta.total - 1);
  });

  it("accepts the GraphQL connection's cursor for the same order", async () => {
    const bearer = await tokenFor(t.url, ADMIN_EMAIL, ADMIN_PASSWORD);
    const res = await gql(t.url, '{ users(first: 3) { pageInfo { endCursor } } }', {
      auth: { bearer },
    });
    const cursor = res.body.data.users.pageInfo.endCursor as string;
    const rest = await admin.get(`/api/v1/users?limit=2&cursor=${cursor}`);
    const expected = await admin.get('/api/v1/users?limit=5');
    expect(rest.status).toBe(200);
    expect(rest.body.data.map((u: { id: string }) => u.id)).toEqual(
      expected.body.data.slice(3, 5).map((u: { id: string }) => u.id),
    );
    expect(rest.body.meta.page).toBeNull(); // reached by cursor without a page number
  });

  it('answers 400 naming cursor for a cursor of another list or sort', async () => {
    const users = await admin.get('/api/v1/users?limit=1');
    const cursor = /cursor=([\w-]+)/.exec(users.headers.get('link')!)![1];
    for (const path of [
      `/api/v1/posts?cursor=${cursor}`,
      `/api/v1/users?sort=name&cursor=${cursor}`,
      '/api/v1/users?cursor=not-a-cursor',
      '/api/v1/users?cursor=%25%25',
    ]) {
      const res = await admin.get(path);
      expect(res.status, path).toBe(400);
      expect(res.body.error.code).toBe('bad_request');
      expect(res.body.error.details).toEqual([
        { field: 'cursor', message: expect.stringContaining('cursor') },
      ]);
    }
  });

  it('serves page numbers up to page * limit = 10000 and answers 400 naming page beyond', async () => {
    expect((await admin.get('/api/v1/users?page=100&limit=100')).status).toBe(200);
    expect((await admin.get('/api/v1/users?page=500')).status).toBe(200);
    for (const path of [
      '/api/v1/users?page=501',
      '/api/v1/users?page=101&limit=100',
      '/api/v1/posts?page=10001&limit=1',
      `/api/v1/users/${alice.id}/orders?page=600`,
      `/api/v1/rooms/${roomId}/messages?page=600`,
      '/api/v1/rooms?page=600',
    ]) {
      const res = await admin.get(path);
      expect(res.status, path).toBe(400);
      expect(res.body.error.code).toBe('bad_request');
      expect(res.body.error.details).toEqual([
        { field: 'page', message: expect.stringMatching(/10000.*Link rel="next".*cursor/) },
      ]);
    }
  });

  it('links prev and last by page number, next by cursor, on a cursor page', async () => {
    const res = await admin.get('/api/v1/users?page=2&limit=2');
    const last = linkOf(res.headers.get('link'), 'last')!;
    expect(last).toMatch(/page=\d+&limit=2$/);
    expect(linkOf(res.headers.get('link'), 'prev')).toBe('/api/v1/users?page=1&limit=2');
    const next = linkOf(res.headers.get('link'), 'next')!;
    const cursorPage = await admin.get(next);
    expect(cursorPage.body.meta.page).toBe(3);
    expect(linkOf(cursorPage.headers.get('link'), 'prev')).toBe('/api/v1/users?page=2&limit=2');
    expect(linkOf(cursorPage.headers.get('link'), 'next')).toMatch(/page=4&limit=2&cursor=/);
    expect(linkOf(cursorPage.headers.get('link'), 'last')).toBe(last);
  });

  it('keeps messages after=<message id> working next to the cursor', async () => {
    const all = await admin.get(`/api/v1/rooms/${roomId}/messages?limit=100`);
    const ids = all.body.data.map((m: { id: string }) => m.id) as string[];
    const { ids: seen, metas } = await followNext(
      admin,
      `/api/v1/rooms/${roomId}/messages?after=${ids[2]}&limit=2`,
    );
    expect(seen).toEqual(ids.slice(3));
    expect(metas[0].total).toBe(ids.length - 3);
  });
});
