import { DataSource } from 'typeorm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PUBLIC_URL, startApp, type TestApp } from './helpers/app.js';
import { adminClient, createUser, type CreatedUser } from './helpers/factories.js';
import { request, type Client } from './helpers/http.js';
import { gql } from './graphql-client.js';

const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

/** What is stored, read straight from the database (not through the API under test). */
async function storedPost(t: TestApp, id: string) {
  const ds = t.app.get(DataSource);
  const p = ds.options.type === 'postgres' ? '$1' : '?';
  const rows = await ds.query<Record<string, unknown>[]>(
    `SELECT id, author_id, title, body, deleted_at FROM posts WHERE id = ${p}`,
    [id],
  );
  return rows[0];
}

describe('posts resource (/api/v1/posts)', () => {
  let t: TestApp;
  let admin: Client;
  let alice: CreatedUser;
  let bob: CreatedUser;
  let guest: CreatedUser;

  async function postBy(
    user: CreatedUser,
    title = `Post ${Math.random()}`,
    body = 'text',
  ): Promise<string> {
    const res = await user.client.post('/api/v1/posts', { title, body });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    return res.body.data.id as string;
  }

  beforeAll(async () => {
    t = await startApp();
    admin = await adminClient(t.url);
    alice = await createUser(t.url, { name: 'Alice' });
    bob = await createUser(t.url, { name: 'Bob' });
    guest = await createUser(t.url, { name: 'Gus', role: 'GUEST' });
  });
  afterAll(async () => {
    await t.close();
  });

  describe('POST /posts', () => {
    it('creates a post by the caller: 201, Location, body and the stored row', async () => {
      const res = await alice.client.post('/api/v1/posts', { title: '  Hello  ', body: 'World' });
      expect(res.status).toBe(201);
      const id = res.body.data.id as string;
      expect(id).toMatch(/^pst_[0-9A-HJKMNP-TV-Z]{26}$/);
      expect(res.headers.get('location')).toBe(`${PUBLIC_URL}/api/v1/posts/${id}`);
      expect(res.body.data).toEqual({
        id,
        author_id: alice.id,
        title: 'Hello',
        body: 'World',
        created_at: expect.stringMatching(ISO),
        updated_at: res.body.data.created_at,
      });
      expect(await storedPost(t, id)).toMatchObject({
        author_id: alice.id,
        title: 'Hello',
        body: 'World',
        deleted_at: null,
      });
    });

    it('returns 422 with details for invalid and unknown members, and stores nothing', async () => {
      const before = (await admin.get('/api/v1/posts')).body.meta.total as number;
      const invalid = await alice.client.post('/api/v1/posts', {
        title: '',
        body: 'x'.repeat(50_001),
      });
      expect(invalid.status).toBe(422);
      expect(invalid.body.error.code).toBe('validation_failed');
      expect(invalid.body.error.details.map((d: { field: string }) => d.field).sort()).toEqual([
        'body',
        'title',
      ]);
      const missing = await alice.client.post('/api/v1/posts', { title: 'no body' });
      expect(missing.status).toBe(422);
      const unknown = await alice.client.post('/api/v1/posts', {
        title: 't',
        body: 'b',
        author_id: bob.id,
      });
      expect(unknown.status).toBe(422);
      expect(unknown.body.error.details).toEqual([
        { field: 'author_id', message: 'author_id is not a known member' },
      ]);
      expect((await admin.get('/api/v1/posts')).body.meta.total).toBe(before);
    });

    it('is forbidden (403) for a GUEST and unauthorized (401) without credentials', async () => {
      const asGuest = await guest.client.post('/api/v1/posts', { title: 't', body: 'b' });
      expect(asGuest.status).toBe(403);
      expect(asGuest.body.error.code).toBe('forbidden');
      const anonymous = await request(t.url, '/api/v1/posts', {
        method: 'POST',
        body: { title: 't', body: 'b' },
      });
      expect(anonymous.status).toBe(401);
      expect(anonymous.headers.get('www-authenticate')).toContain('Basic');
    });

    it('answers 400 for a body that is not JSON and 415 for another content type', async () => {
      const bad = await alice.client.post('/api/v1/posts', undefined, {
        rawBody: '{"title":',
        headers: { 'content-type': 'application/json' },
      });
      expect(bad.status).toBe(400);
      const text = await alice.client.post('/api/v1/posts', undefined, {
        rawBody: 'title=x',
        headers: { 'content-type': 'text/plain' },
      });
      expect(text.status).toBe(415);
    });
  });

  describe('GET /posts/{id}', () => {
    it('returns the post to any authenticated caller (GUEST included)', async () => {
      const id = await postBy(alice, 'Readable');
      const res = await guest.client.get(`/api/v1/posts/${id}`);
      expect(res.status).toBe(200);
      expect(res.body.data).toMatchObject({ id, title: 'Readable', author_id: alice.id });
      const anonymous = await request(t.url, `/api/v1/posts/${id}`);
      expect(anonymous.status).toBe(401);
    });

    it('returns 404 for unknown, malformed and other-type ids', async () => {
      for (const id of ['pst_01ZZZZZZZZZZZZZZZZZZZZZZZZ', 'nope', alice.id]) {
        const res = await alice.client.get(`/api/v1/posts/${id}`);
        expect(res.status, id).toBe(404);
        expect(res.body.error.code).toBe('not_found');
      }
    });

    it('sends a strong ETag, answers 304 to If-None-Match, and HEAD mirrors GET', async () => {
      const id = await postBy(alice);
      const first = await bob.client.get(`/api/v1/posts/${id}`);
      const etag = first.headers.get('etag')!;
      expect(etag).toMatch(/^"[^"]+"$/);
      const again = await bob.client.get(`/api/v1/posts/${id}`, {
        headers: { 'if-none-match': etag },
      });
      expect(again.status).toBe(304);
      expect(again.text).toBe('');
      const head = await bob.client.head(`/api/v1/posts/${id}`);
      expect(head.status).toBe(200);
      expect(head.text).toBe('');
      expect(head.headers.get('etag')).toBe(etag);
    });
  });

  describe('PUT and PATCH /posts/{id}', () => {
    it('PUT replaces title and body; a missing member is 422 and changes nothing', async () => {
      const id = await postBy(alice, 'Before', 'old');
      const res = await alice.client.put(`/api/v1/posts/${id}`, { title: 'After', body: 'new' });
      expect(res.status).toBe(200);
      expect(res.body.data).toMatchObject({ title: 'After', body: 'new' });
      expect(res.body.data.updated_at > res.body.data.created_at).toBe(true);
      const missing = await alice.client.put(`/api/v1/posts/${id}`, { title: 'Only title' });
      expect(missing.status).toBe(422);
      expect(await storedPost(t, id)).toMatchObject({ title: 'After', body: 'new' });
    });

    it('PATCH changes only the supplied members (merge patch) and rejects null for required ones', async () => {
      const id = await postBy(alice, 'Title', 'Body');
      const res = await alice.client.patch(
        `/api/v1/posts/${id}`,
        { body: 'Patched' },
        {
          headers: { 'content-type': 'application/merge-patch+json' },
        },
      );
      expect(res.status).toBe(200);
      expect(res.body.data).toMatchObject({ title: 'Title', body: 'Patched' });
      const nulled = await alice.client.patch(`/api/v1/posts/${id}`, { title: null });
      expect(nulled.status).toBe(422);
      expect(await storedPost(t, id)).toMatchObject({ title: 'Title', body: 'Patched' });
    });

    it('returns 412 when If-Match does not match and applies a matching one', async () => {
      const id = await postBy(alice, 'Guarded');
      const current = await alice.client.get(`/api/v1/posts/${id}`);
      const stale = await alice.client.patch(
        `/api/v1/posts/${id}`,
        { title: 'Stale' },
        { headers: { 'if-match': '"nope"' } },
      );
      expect(stale.status).toBe(412);
      expect(stale.body.error.code).toBe('precondition_failed');
      expect((await storedPost(t, id))?.title).toBe('Guarded');
      const fresh = await alice.client.patch(
        `/api/v1/posts/${id}`,
        { title: 'Fresh' },
        {
          headers: { 'if-match': current.headers.get('etag')! },
        },
      );
      expect(fresh.status).toBe(200);
      expect(fresh.body.data.title).toBe('Fresh');
    });

    it('follows the permission rules: own for USER, any for ADMIN, 403 for others and GUESTs, 404 unknown', async () => {
      const id = await postBy(alice, 'Mine');
      expect(
        (await bob.client.patch(`/api/v1/posts/${id}`, { title: 'Bob was here' })).status,
      ).toBe(403);
      expect(
        (await guest.client.patch(`/api/v1/posts/${id}`, { title: 'Guest was here' })).status,
      ).toBe(403);
      expect((await admin.patch(`/api/v1/posts/${id}`, { title: 'Moderated' })).status).toBe(200);
      expect(
        (await alice.client.patch('/api/v1/posts/pst_01ZZZZZZZZZZZZZZZZZZZZZZZZ', { title: 'x' }))
          .status,
      ).toBe(404);
      expect((await storedPost(t, id))?.title).toBe('Moderated');
    });

    it('refuses a GUEST at the route (the declared floor is USER): 403 for PUT, PATCH and DELETE even for an invalid body or an unknown post, nothing changed', async () => {
      const id = await postBy(alice, 'Kept');
      const before = await storedPost(t, id);
      const unknown = 'pst_01ZZZZZZZZZZZZZZZZZZZZZZZZ';
      const attempts: [string, () => Promise<{ status: number; body: unknown }>][] = [];
      for (const target of [id, unknown]) {
        for (const body of [{ title: 'G', body: 'g' }, { title: '' }, { title: 7 }, {}]) {
          const label = `${target} ${JSON.stringify(body)}`;
          attempts.push([`PUT ${label}`, () => guest.client.put(`/api/v1/posts/${target}`, body)]);
          attempts.push([
            `PATCH ${label}`,
            () => guest.client.patch(`/api/v1/posts/${target}`, body),
          ]);
        }
        attempts.push([`DELETE ${target}`, () => guest.client.delete(`/api/v1/posts/${target}`)]);
      }
      for (const [label, send] of attempts) {
        const res = await send();
        expect(res.status, label).toBe(403);
        expect(res.body, label).toEqual({
          error: { code: 'forbidden', message: expect.any(String) },
        });
      }
      expect(await storedPost(t, id)).toEqual(before);
      expect((await alice.client.get(`/api/v1/posts/${id}`)).body.data.title).toBe('Kept');
    });
  });

  describe('DELETE /posts/{id}', () => {
    it('soft-deletes (204, empty), hides the post (404), keeps the row and is repeatable', async () => {
      const id = await postBy(alice);
      const res = await alice.client.delete(`/api/v1/posts/${id}`);
      expect(res.status).toBe(204);
      expect(res.text).toBe('');
      expect((await alice.client.get(`/api/v1/posts/${id}`)).status).toBe(404);
      expect((await storedPost(t, id))?.deleted_at).toEqual(expect.stringMatching(ISO));
      expect((await alice.client.delete(`/api/v1/posts/${id}`)).status).toBe(204);
      expect(
        (await alice.client.delete('/api/v1/posts/pst_01ZZZZZZZZZZZZZZZZZZZZZZZZ')).status,
      ).toBe(404);
    });

    it('lets only the author or an ADMIN delete, and honours If-Match', async () => {
      const id = await postBy(alice);
      expect((await bob.client.delete(`/api/v1/posts/${id}`)).status).toBe(403);
      expect(
        (await alice.client.delete(`/api/v1/posts/${id}`, { headers: { 'if-match': '"nope"' } }))
          .status,
      ).toBe(412);
      expect((await storedPost(t, id))?.deleted_at).toBeNull();
      expect((await admin.delete(`/api/v1/posts/${id}`)).status).toBe(204);
    });

    it('a deleted post disappears from GraphQL reads as well (one service)', async () => {
      const id = await postBy(bob, 'Short-lived');
      await bob.client.delete(`/api/v1/posts/${id}`);
      const res = await gql(t.url, `{ post(id: "${id}") { id } }`, { auth: { bearer: bob.token } });
      expect(res.body.errors?.[0]?.extensions?.code).toBe('NOT_FOUND');
    });
  });

  describe('GET /posts (list)', () => {
    let writer: CreatedUser;
    let other: CreatedUser;
    let ids: string[];

    // posts of one author of their own, so totals are exact
    beforeAll(async () => {
      writer = await createUser(t.url, { name: 'Lister' });
      other = await createUser(t.url, { name: 'Other' });
      ids = [];
      for (const title of ['Cherry', 'apple', 'Banana']) {
        const res = await writer.client.post('/api/v1/posts', { title, body: '' });
        ids.push(res.body.data.id);
      }
      await other.client.post('/api/v1/posts', { title: 'Elsewhere', body: '' });
    });

    it('paginates with meta and Link (first/prev/next/last), filtered by author_id', async () => {
      const res = await other.client.get(`/api/v1/posts?author_id=${writer.id}&page=2&limit=1`);
      expect(res.status).toBe(200);
      expect(res.body.meta).toEqual({ page: 2, limit: 1, total: 3 });
      expect(res.body.data.map((p: { id: string }) => p.id)).toEqual([ids[1]]);
      const link = res.headers.get('link')!;
      const base = `${PUBLIC_URL}/api/v1/posts?author_id=${writer.id}`;
      expect(link).toContain(`<${base}&page=1&limit=1>; rel="first"`);
      expect(link).toContain(`<${base}&page=1&limit=1>; rel="prev"`);
      expect(link).toMatch(/&page=3&limit=1&cursor=[\w-]+>; rel="next"/);
      expect(link).toContain(`<${base}&page=3&limit=1&cursor=`);
      expect(link).toContain(`<${base}&page=3&limit=1>; rel="last"`);
    });

    it('sorts by created_at (default), -created_at, and title', async () => {
      const byDefault = await writer.client.get(`/api/v1/posts?author_id=${writer.id}`);
      expect(byDefault.body.data.map((p: { id: string }) => p.id)).toEqual(ids);
      const desc = await writer.client.get(`/api/v1/posts?author_id=${writer.id}&sort=-created_at`);
      expect(desc.body.data.map((p: { id: string }) => p.id)).toEqual([...ids].reverse());
      const byTitle = await writer.client.get(`/api/v1/posts?author_id=${writer.id}&sort=title`);
      const titles = byTitle.body.data.map((p: { title: string }) => p.title) as string[];
      // the database's collation decides where lower case goes (binary on SQLite, linguistic on PostgreSQL)
      expect([
        ['Banana', 'Cherry', 'apple'],
        ['apple', 'Banana', 'Cherry'],
      ]).toContainEqual(titles);
      const byTitleDesc = await writer.client.get(
        `/api/v1/posts?author_id=${writer.id}&sort=-title`,
      );
      expect(byTitleDesc.body.data.map((p: { title: string }) => p.title)).toEqual(
        [...titles].reverse(),
      );
    });

    it('answers 400 naming each bad parameter, and an empty page past the end', async () => {
      const bad = await writer.client.get('/api/v1/posts?limit=0&sort=author&author_id=nope');
      expect(bad.status).toBe(400);
      expect(bad.body.error.details.map((d: { field: string }) => d.field).sort()).toEqual([
        'limit',
        'sort',
      ]);
      const badAuthor = await writer.client.get('/api/v1/posts?author_id=nope');
      expect(badAuthor.status).toBe(400);
      expect(badAuthor.body.error.details).toEqual([
        { field: 'author_id', message: 'author_id must be a user id' },
      ]);
      const past = await writer.client.get(`/api/v1/posts?author_id=${writer.id}&page=99`);
      expect(past.status).toBe(200);
      expect(past.body).toEqual({ data: [], meta: { page: 99, limit: 20, total: 3 } });
    });

    it('lists ETag-conditionally (304) and hides deleted posts', async () => {
      // an author of its own: deleting one of the shared writer's posts would change the other tests' totals
      const author = await createUser(t.url);
      const own: string[] = [];
      for (const title of ['One', 'Two']) {
        own.push((await author.client.post('/api/v1/posts', { title, body: '' })).body.data.id);
      }
      const list = `/api/v1/posts?author_id=${author.id}`;
      const first = await author.client.get(list);
      expect(first.body.meta.total).toBe(2);
      const again = await author.client.get(list, {
        headers: { 'if-none-match': first.headers.get('etag')! },
      });
      expect(again.status).toBe(304);
      expect((await author.client.delete(`/api/v1/posts/${own[1]}`)).status).toBe(204);
      const after = await author.client.get(list);
      expect(after.body.meta.total).toBe(1);
      expect(after.body.data.map((p: { id: string }) => p.id)).toEqual([own[0]]);
      expect(after.headers.get('etag')).not.toBe(first.headers.get('etag'));
    });

    it('OPTIONS answers 200 with Allow for the collection and the item', async () => {
      const list = await writer.client.options('/api/v1/posts');
      expect(list.status).toBe(200);
      expect(list.headers.get('allow')).toBe('GET, HEAD, POST, OPTIONS');
      const item = await writer.client.options(`/api/v1/posts/${ids[0]}`);
      expect(item.headers.get('allow')).toBe('GET, HEAD, PUT, PATCH, DELETE, OPTIONS');
    });
  });
});
