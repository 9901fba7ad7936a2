import { DataSource } from 'typeorm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PUBLIC_URL, startApp, type TestApp } from './helpers/app.js';
import {
  adminClient,
  createUser,
  tokenFor,
  unique,
  type CreatedUser,
} from './helpers/factories.js';
import { client, request, type Client } from './helpers/http.js';

/** What is stored, read straight from the database (not through the API under test). */
async function storedUser(t: TestApp, id: string) {
  const ds = t.app.get(DataSource);
  const p = ds.options.type === 'postgres' ? '$1' : '?';
  const rows = await ds.query<Record<string, unknown>[]>(
    `SELECT id, name, email, role, age, password_hash, deleted_at FROM users WHERE id = ${p}`,
    [id],
  );
  return rows[0];
}

describe('users resource (/api/v1/users)', () => {
  let t: TestApp;
  let admin: Client;
  let alice: CreatedUser;
  let bob: CreatedUser;
  let guest: CreatedUser;

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

  describe('POST /users', () => {
    it('creates a user: 201, Location, body, and the stored row (password hashed with argon2id)', async () => {
      const email = `${unique()}@example.com`;
      const res = await admin.post('/api/v1/users', {
        name: '  Carol  ',
        email,
        age: 33,
        password: 'a-long-password-1',
      });
      expect(res.status).toBe(201);
      const id = res.body.data.id as string;
      expect(id).toMatch(/^usr_[0-9A-HJKMNP-TV-Z]{26}$/);
      expect(res.headers.get('location')).toBe(`${PUBLIC_URL}/api/v1/users/${id}`);
      expect(res.body.data).toEqual({
        id,
        name: 'Carol',
        email,
        role: 'USER',
        age: 33,
        created_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
        updated_at: res.body.data.created_at,
      });
      expect(res.body.data).not.toHaveProperty('password');
      const row = await storedUser(t, id);
      expect(row?.name).toBe('Carol');
      // the suite's cheap profile (test/helpers/app.ts)
      expect(String(row?.password_hash)).toMatch(/^\$argon2id\$v=19\$m=1024,t=1,p=1\$/);
    });

    it('hashes with OWASP argon2id parameters (19 MiB, t=2) outside the test profile, and they verify', async () => {
      const real = await startApp({ PASSWORD_HASH_PROFILE: undefined });
      try {
        expect(real.config.passwordHashProfile).toBe('owasp');
        const user = await createUser(real.url);
        const row = await storedUser(real, user.id);
        expect(String(row?.password_hash)).toMatch(/^\$argon2id\$v=19\$m=19456,t=2,p=1\$/);
        // the ADMIN seeded at boot too, and both log in with their passwords
        const admin = await real.app
          .get(DataSource)
          .query<
            { password_hash: string }[]
          >(`SELECT password_hash FROM users WHERE role = 'ADMIN'`);
        expect(admin[0]?.password_hash).toMatch(/^\$argon2id\$v=19\$m=19456,t=2,p=1\$/);
        expect(await tokenFor(real.url, user.email, user.password)).toMatch(/^ey/);
        const wrong = await request(real.url, '/api/v1/auth/token', {
          method: 'POST',
          body: { email: user.email, password: `${user.password}x` },
        });
        expect(wrong.status).toBe(401);
      } finally {
        await real.close();
      }
    });

    it('returns 422 with field details for invalid members and stores nothing', async () => {
      const email = `${unique()}@example.com`;
      const res = await admin.post('/api/v1/users', {
        name: '',
        email: 'not-an-email',
        age: 200,
        role: 'KING',
      });
      expect(res.status).toBe(422);
      expect(res.body.error.code).toBe('validation_failed');
      const fields = (res.body.error.details as { field: string }[]).map((d) => d.field).sort();
      expect(fields).toEqual(expect.arrayContaining(['age', 'email', 'name', 'role']));
      const list = await admin.get(`/api/v1/users?limit=100`);
      expect(list.body.data.some((u: { email: string }) => u.email === email)).toBe(false);
    });

    it('returns 422 when a required member is missing and for unknown members', async () => {
      const missing = await admin.post('/api/v1/users', { name: 'No Email' });
      expect(missing.status).toBe(422);
      expect(missing.body.error.details).toContainEqual(
        expect.objectContaining({ field: 'email' }),
      );
      const unknown = await admin.post('/api/v1/users', {
        name: 'X',
        email: `${unique()}@example.com`,
        admin: true,
      });
      expect(unknown.status).toBe(422);
      expect(unknown.body.error.details).toContainEqual(
        expect.objectContaining({ field: 'admin' }),
      );
    });

    it('returns 409 on a duplicate email, case-insensitively', async () => {
      const res = await admin.post('/api/v1/users', {
        name: 'Dup',
        email: alice.email.toUpperCase(),
      });
      expect(res.status).toBe(409);
      expect(res.body.error.code).toBe('conflict');
    });

    it('lets exactly one of many parallel creates with the same email succeed', async () => {
      const email = `${unique()}@example.com`;
      const results = await Promise.all(
        Array.from({ length: 8 }, () => admin.post('/api/v1/users', { name: 'Racer', email })),
      );
      const statuses = results.map((r) => r.status).sort();
      expect(statuses.filter((s) => s === 201)).toHaveLength(1);
      expect(statuses.filter((s) => s === 409)).toHaveLength(7);
    });

    it('is forbidden (403) for a USER and unauthorized (401) without credentials', async () => {
      const body = { name: 'Nope', email: `${unique()}@example.com` };
      const forbidden = await alice.client.post('/api/v1/users', body);
      expect(forbidden.status).toBe(403);
      expect(forbidden.body.error.code).toBe('forbidden');
      const anonymous = await client(t.url).post('/api/v1/users', body);
      expect(anonymous.status).toBe(401);
      expect(anonymous.body.error.code).toBe('unauthorized');
      expect(anonymous.headers.get('www-authenticate')).toBe('Basic realm="atrium", Bearer');
    });
  });

  describe('GET /users/{id}', () => {
    it('returns the user; email is visible to the user and to admins only', async () => {
      const self = await alice.client.get(`/api/v1/users/${alice.id}`);
      expect(self.status).toBe(200);
      expect(self.body.data.email).toBe(alice.email);
      const other = await bob.client.get(`/api/v1/users/${alice.id}`);
      expect(other.status).toBe(200);
      expect(other.body.data.email).toBeNull();
      expect(other.body.data.name).toBe('Alice');
      const byAdmin = await admin.get(`/api/v1/users/${alice.id}`);
      expect(byAdmin.body.data.email).toBe(alice.email);
      const byGuest = await guest.client.get(`/api/v1/users/${alice.id}`);
      expect(byGuest.status).toBe(200);
      expect(byGuest.body.data.email).toBeNull();
    });

    it('returns 404 for unknown, malformed and other-type ids', async () => {
      for (const id of [
        'usr_01ARZ3NDEKTSV4RRFFQ69G5FAV',
        'nope',
        'pst_01ARZ3NDEKTSV4RRFFQ69G5FAV',
      ]) {
        const res = await admin.get(`/api/v1/users/${id}`);
        expect(res.status).toBe(404);
        expect(res.body).toEqual({ error: { code: 'not_found', message: expect.any(String) } });
      }
    });

    it('sends a strong ETag and answers 304 to a matching If-None-Match', async () => {
      const first = await alice.client.get(`/api/v1/users/${alice.id}`);
      const etag = first.headers.get('etag');
      expect(etag).toMatch(/^"[^"]+"$/);
      const again = await alice.client.get(`/api/v1/users/${alice.id}`, {
        headers: { 'if-none-match': etag! },
      });
      expect(again.status).toBe(304);
      expect(again.text).toBe('');
      expect(again.headers.get('etag')).toBe(etag);
      const star = await alice.client.get(`/api/v1/users/${alice.id}`, {
        headers: { 'if-none-match': '*' },
      });
      expect(star.status).toBe(304);
      const stale = await alice.client.get(`/api/v1/users/${alice.id}`, {
        headers: { 'if-none-match': '"old"' },
      });
      expect(stale.status).toBe(200);
    });

    it('HEAD returns the headers of GET without a body', async () => {
      const get = await alice.client.get(`/api/v1/users/${alice.id}`);
      const head = await alice.client.head(`/api/v1/users/${alice.id}`);
      expect(head.status).toBe(200);
      expect(head.text).toBe('');
      expect(head.headers.get('etag')).toBe(get.headers.get('etag'));
      expect(head.headers.get('content-type')).toContain('application/json');
      expect(head.headers.get('content-length')).toBe(String(Buffer.byteLength(get.text)));
    });
  });

  describe('PUT /users/{id}', () => {
    it('replaces the representation: an omitted optional member becomes null', async () => {
      const u = await createUser(t.url, { age: 40 });
      const email = `${unique()}@example.com`;
      const res = await u.client.put(`/api/v1/users/${u.id}`, { name: 'Replaced', email });
      expect(res.status).toBe(200);
      expect(res.body.data).toMatchObject({ name: 'Replaced', email, age: null, role: 'USER' });
      const row = await storedUser(t, u.id);
      expect(row).toMatchObject({ name: 'Replaced', email, age: null });
    });

    it('is idempotent: the same PUT twice gives the same representation', async () => {
      const u = await createUser(t.url);
      const body = { name: 'Same', email: u.email, age: 5 };
      const a = await u.client.put(`/api/v1/users/${u.id}`, body);
      const b = await u.client.put(`/api/v1/users/${u.id}`, body);
      expect(b.status).toBe(200);
      const strip = (d: Record<string, unknown>) => ({ ...d, updated_at: undefined });
      expect(strip(b.body.data)).toEqual(strip(a.body.data));
    });

    it('returns 422 when a required member is missing and changes nothing', async () => {
      const res = await alice.client.put(`/api/v1/users/${alice.id}`, { name: 'Only Name' });
      expect(res.status).toBe(422);
      expect(res.body.error.details).toContainEqual(expect.objectContaining({ field: 'email' }));
      expect((await storedUser(t, alice.id))?.name).toBe('Alice');
    });

    it('returns 412 when If-Match does not match and applies a matching one', async () => {
      const u = await createUser(t.url);
      const current = await u.client.get(`/api/v1/users/${u.id}`);
      const stale = await u.client.put(
        `/api/v1/users/${u.id}`,
        { name: 'Stale', email: u.email },
        { headers: { 'if-match': '"not-the-etag"' } },
      );
      expect(stale.status).toBe(412);
      expect(stale.body.error.code).toBe('precondition_failed');
      expect((await storedUser(t, u.id))?.name).not.toBe('Stale');
      const fresh = await u.client.put(
        `/api/v1/users/${u.id}`,
        { name: 'Fresh', email: u.email },
        { headers: { 'if-match': current.headers.get('etag')! } },
      );
      expect(fresh.status).toBe(200);
      expect(fresh.body.data.name).toBe('Fresh');
    });

    it('parallel PUTs with the same If-Match: exactly one wins, the rest get 412', async () => {
      const u = await createUser(t.url);
      const etag = (await u.client.get(`/api/v1/users/${u.id}`)).headers.get('etag')!;
      const results = await Promise.all(
        Array.from({ length: 6 }, (_, i) =>
          u.client.put(
            `/api/v1/users/${u.id}`,
            { name: `Writer ${i}`, email: u.email },
            { headers: { 'if-match': etag } },
          ),
        ),
      );
      const statuses = results.map((r) => r.status);
      expect(statuses.filter((s) => s === 200)).toHaveLength(1);
      expect(statuses.filter((s) => s === 412)).toHaveLength(5);
      const winner = results.find((r) => r.status === 200)!.body.data.name;
      expect((await storedUser(t, u.id))?.name).toBe(winner);
    });

    it('parallel PUTs without preconditions all succeed and the stored row is one of them', async () => {
      const u = await createUser(t.url);
      const names = Array.from({ length: 6 }, (_, i) => `Parallel ${i}`);
      const results = await Promise.all(
        names.map((name) => u.client.put(`/api/v1/users/${u.id}`, { name, email: u.email })),
      );
      expect(results.every((r) => r.status === 200)).toBe(true);
      expect(names).toContain((await storedUser(t, u.id))?.name);
    });

    it('a USER may not replace another user (403) nor change their own role (403)', async () => {
      const other = await bob.client.put(`/api/v1/users/${alice.id}`, {
        name: 'Hijack',
        email: alice.email,
      });
      expect(other.status).toBe(403);
      const role = await bob.client.put(`/api/v1/users/${bob.id}`, {
        name: 'Bob',
        email: bob.email,
        role: 'ADMIN',
      });
      expect(role.status).toBe(403);
      expect((await storedUser(t, bob.id))?.role).toBe('USER');
    });

    it('returns 409 when the new email belongs to another user', async () => {
      const res = await bob.client.put(`/api/v1/users/${bob.id}`, {
        name: 'Bob',
        email: alice.email,
      });
      expect(res.status).toBe(409);
      expect((await storedUser(t, bob.id))?.email).toBe(bob.email);
    });
  });

  describe('PATCH /users/{id}', () => {
    it('changes only the supplied members (merge patch) and null clears a nullable member', async () => {
      const u = await createUser(t.url, { age: 21, name: 'Patchy' });
      const res = await u.client.patch(
        `/api/v1/users/${u.id}`,
        { age: null },
        {
          headers: { 'content-type': 'application/merge-patch+json' },
        },
      );
      expect(res.status).toBe(200);
      expect(res.body.data).toMatchObject({ name: 'Patchy', email: u.email, age: null });
      const named = await u.client.patch(`/api/v1/users/${u.id}`, { name: 'Renamed' });
      expect(named.body.data).toMatchObject({ name: 'Renamed', age: null });
      expect(named.body.data.updated_at > named.body.data.created_at).toBe(true);
      expect(await storedUser(t, u.id)).toMatchObject({ name: 'Renamed', age: null });
    });

    it('rejects null for a required member (422) and keeps the row', async () => {
      const before = await storedUser(t, alice.id);
      expect(before).toBeDefined();
      for (const field of ['name', 'email', 'role', 'password']) {
        const res = await alice.client.patch(`/api/v1/users/${alice.id}`, { [field]: null });
        expect(res.status, field).toBe(422);
        expect(res.body.error.details).toContainEqual(expect.objectContaining({ field }));
      }
      expect(await storedUser(t, alice.id)).toEqual(before);
    });

    it('lets an ADMIN change a role; the new role takes effect at once', async () => {
      const u = await createUser(t.url);
      const res = await admin.patch(`/api/v1/users/${u.id}`, { role: 'GUEST' });
      expect(res.status).toBe(200);
      expect(res.body.data.role).toBe('GUEST');
      const write = await u.client.patch(`/api/v1/users/${u.id}`, { name: 'Guest now' });
      expect(write.status).toBe(403);
    });

    it('a GUEST cannot update even themself (403)', async () => {
      const res = await guest.client.patch(`/api/v1/users/${guest.id}`, { name: 'Nope' });
      expect(res.status).toBe(403);
    });

    it('refuses a GUEST at the route (the declared floor is USER): 403 for PUT, PATCH, DELETE and batch even for an invalid body or an unknown user, nothing changed', async () => {
      const before = await storedUser(t, guest.id);
      const unknown = 'usr_01ARZ3NDEKTSV4RRFFQ69G5FAV';
      const attempts: [string, () => Promise<{ status: number; body: unknown }>][] = [];
      for (const target of [guest.id, unknown]) {
        for (const body of [{ name: 'Nope' }, { name: '' }, { age: 'old' }, {}]) {
          const label = `${target} ${JSON.stringify(body)}`;
          attempts.push([`PUT ${label}`, () => guest.client.put(`/api/v1/users/${target}`, body)]);
          attempts.push([
            `PATCH ${label}`,
            () => guest.client.patch(`/api/v1/users/${target}`, body),
          ]);
        }
        attempts.push([`DELETE ${target}`, () => guest.client.delete(`/api/v1/users/${target}`)]);
      }
      for (const body of [
        { operations: [{ op: 'update', id: guest.id, data: { name: 'Nope' } }] },
        { operations: [] },
        {},
      ]) {
        attempts.push([
          `batch ${JSON.stringify(body)}`,
          () => guest.client.post('/api/v1/users/batch', body),
        ]);
      }
      for (const [label, send] of attempts) {
        const res = await send();
        expect(res.status, label).toBe(403);
        expect(res.body, label).toEqual({
          error: { code: 'forbidden', message: expect.any(String) },
        });
      }
      expect(await storedUser(t, guest.id)).toEqual(before);
    });

    it('returns 404 for an unknown user', async () => {
      const res = await admin.patch('/api/v1/users/usr_01ARZ3NDEKTSV4RRFFQ69G5FAV', {
        name: 'Ghost',
      });
      expect(res.status).toBe(404);
    });
  });

  describe('DELETE /users/{id}', () => {
    it('soft-deletes (204, empty), hides the user (404), frees the email and is repeatable', async () => {
      const u = await createUser(t.url);
      const del = await admin.delete(`/api/v1/users/${u.id}`);
      expect(del.status).toBe(204);
      expect(del.text).toBe('');
      expect((await admin.get(`/api/v1/users/${u.id}`)).status).toBe(404);
      const row = await storedUser(t, u.id);
      expect(row?.deleted_at).toEqual(expect.any(String)); // nothing is physically lost
      expect((await admin.delete(`/api/v1/users/${u.id}`)).status).toBe(204);
      const again = await admin.post('/api/v1/users', { name: 'Reuse', email: u.email });
      expect(again.status).toBe(201);
      // the deleted user's credentials no longer work
      expect((await u.client.get('/api/v1/auth/me')).status).toBe(401);
    });

    it('a USER may delete themself but not others; unknown ids are 404', async () => {
      const u = await createUser(t.url);
      expect((await u.client.delete(`/api/v1/users/${alice.id}`)).status).toBe(403);
      expect((await u.client.delete(`/api/v1/users/${u.id}`)).status).toBe(204);
      expect((await admin.delete('/api/v1/users/usr_01ARZ3NDEKTSV4RRFFQ69G5FAV')).status).toBe(404);
    });

    it('honours If-Match (412 on mismatch, nothing deleted)', async () => {
      const u = await createUser(t.url);
      const res = await admin.delete(`/api/v1/users/${u.id}`, {
        headers: { 'if-match': '"nope"' },
      });
      expect(res.status).toBe(412);
      expect((await storedUser(t, u.id))?.deleted_at).toBeNull();
    });
  });

  describe('GET /users (list)', () => {
    it('paginates with meta and Link (first/prev/next/last)', async () => {
      // three USERs of its own, so there are at least three pages of one whatever ran before
      for (let i = 0; i < 3; i++) {
        await createUser(t.url);
      }
      const all = await admin.get('/api/v1/users?limit=100&role=USER');
      const total = all.body.meta.total as number;
      expect(total).toBeGreaterThanOrEqual(3);
      const res = await admin.get('/api/v1/users?page=2&limit=1&role=USER');
      expect(res.status).toBe(200);
      expect(res.body.meta).toEqual({ page: 2, limit: 1, total });
      expect(res.body.data.map((u: { id: string }) => u.id)).toEqual([all.body.data[1].id]);
      const link = res.headers.get('link')!;
      expect(link).toContain(`<${PUBLIC_URL}/api/v1/users?page=1&limit=1&role=USER>; rel="first"`);
      expect(link).toContain(`<${PUBLIC_URL}/api/v1/users?page=1&limit=1&role=USER>; rel="prev"`);
      // next carries the keyset cursor of the page's last row (and labels the page it leads to)
      expect(link).toContain(`<${PUBLIC_URL}/api/v1/users?page=3&limit=1&role=USER&cursor=`);
      expect(link).toMatch(/&cursor=[\w-]+>; rel="next"/);
      expect(link).toContain(
        `<${PUBLIC_URL}/api/v1/users?page=${total}&limit=1&role=USER>; rel="last"`,
      );
    });

    it('defaults to page 1, limit 20, sorted by created_at ascending with ids as tie-break', async () => {
      const res = await admin.get('/api/v1/users');
      expect(res.body.meta.page).toBe(1);
      expect(res.body.meta.limit).toBe(20);
      const created = (res.body.data as { created_at: string }[]).map((u) => u.created_at);
      expect([...created].sort()).toEqual(created);
      expect(res.headers.get('link')).not.toContain('rel="prev"');
    });

    it('sorts descending with a leading - and by several fields', async () => {
      const res = await admin.get('/api/v1/users?sort=-created_at&limit=100');
      const created = (res.body.data as { created_at: string }[]).map((u) => u.created_at);
      expect([...created].sort().reverse()).toEqual(created);
      const byName = await admin.get('/api/v1/users?sort=name,-created_at&limit=100');
      const names = (byName.body.data as { name: string }[]).map((u) => u.name);
      expect([...names].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0))).toEqual(names);
    });

    it('filters by role', async () => {
      const res = await admin.get('/api/v1/users?role=GUEST&limit=100');
      expect(res.body.data.length).toBeGreaterThan(0);
      expect((res.body.data as { role: string }[]).every((u) => u.role === 'GUEST')).toBe(true);
      expect(res.body.meta.total).toBe(res.body.data.length);
    });

    it('returns an empty page past the end', async () => {
      const res = await admin.get('/api/v1/users?page=500');
      expect(res.status).toBe(200);
      expect(res.body.data).toEqual([]);
      expect(res.headers.get('link')).not.toContain('rel="next"');
    });

    it.each([
      ['limit=0', 'limit'],
      ['limit=101', 'limit'],
      ['page=abc', 'page'],
      ['page=0', 'page'],
      ['sort=password', 'sort'],
      ['sort=-', 'sort'],
      ['role=KING', 'role'],
    ])('rejects %s with 400 naming the parameter', async (query, field) => {
      const res = await admin.get(`/api/v1/users?${query}`);
      expect(res.status).toBe(400);
      expect(res.body.error.code).toBe('bad_request');
      expect(res.body.error.details).toContainEqual(expect.objectContaining({ field }));
    });

    it('shows emails only to their owner in a USER list', async () => {
      const res = await alice.client.get('/api/v1/users?limit=100');
      for (const u of res.body.data as { id: string; email: string | null }[]) {
        expect(u.email === null || u.id === alice.id).toBe(true);
      }
      expect(
        (res.body.data as { id: string; email: string }[]).find((u) => u.id === alice.id)?.email,
      ).toBe(alice.email);
    });

    it('lists for a GUEST (read is allowed) and 401s for anonymous callers', async () => {
      expect((await guest.client.get('/api/v1/users')).status).toBe(200);
      expect((await client(t.url).get('/api/v1/users')).status).toBe(401);
    });

    it('lists ETag-conditionally (304)', async () => {
      const first = await admin.get('/api/v1/users?limit=5');
      const again = await admin.get('/api/v1/users?limit=5', {
        headers: { 'if-none-match': first.headers.get('etag')! },
      });
      expect(again.status).toBe(304);
    });
  });

  describe('POST /users/batch', () => {
    it('applies creates and updates atomically: 200 with per-operation statuses', async () => {
      const email = `${unique()}@example.com`;
      const res = await admin.post('/api/v1/users/batch', {
        operations: [
          { op: 'create', data: { name: 'Batch One', email } },
          { op: 'update', id: bob.id, data: { age: 44 } },
        ],
      });
      expect(res.status).toBe(200);
      expect(res.body.data).toHaveLength(2);
      expect(res.body.data[0]).toMatchObject({
        op: 'create',
        status: 201,
        data: { name: 'Batch One', email },
      });
      expect(res.body.data[1]).toMatchObject({
        op: 'update',
        status: 200,
        data: { id: bob.id, age: 44 },
      });
      expect((await storedUser(t, res.body.data[0].data.id))?.name).toBe('Batch One');
    });

    it('writes nothing when one operation fails, and reports the first failure with its index', async () => {
      const email = `${unique()}@example.com`;
      const before = (await storedUser(t, alice.id))?.age;
      const res = await admin.post('/api/v1/users/batch', {
        operations: [
          { op: 'create', data: { name: 'Lost', email } },
          { op: 'update', id: alice.id, data: { age: 77 } },
          { op: 'create', data: { name: 'Dup', email: bob.email } },
        ],
      });
      expect(res.status).toBe(409);
      expect(res.body.error.code).toBe('conflict');
      expect(res.body.error.details[0]).toMatchObject({ index: 2, field: 'email' });
      expect((await storedUser(t, alice.id))?.age).toBe(before);
      const list = await admin.get('/api/v1/users?limit=100');
      expect(list.body.data.some((u: { email: string }) => u.email === email)).toBe(false);
    });

    it('returns 422 with the index and field of an invalid operation', async () => {
      const res = await admin.post('/api/v1/users/batch', {
        operations: [
          { op: 'create', data: { name: 'Fine', email: `${unique()}@example.com` } },
          { op: 'create', data: { name: '', email: 'bad' } },
        ],
      });
      expect(res.status).toBe(422);
      expect(res.body.error.details).toContainEqual(
        expect.objectContaining({ index: 1, field: 'name' }),
      );
      expect(res.body.error.details).toContainEqual(
        expect.objectContaining({ index: 1, field: 'email' }),
      );
    });

    it('returns 404 and 403 for the first failing update', async () => {
      const missing = await admin.post('/api/v1/users/batch', {
        operations: [{ op: 'update', id: 'usr_01ARZ3NDEKTSV4RRFFQ69G5FAV', data: { name: 'x' } }],
      });
      expect(missing.status).toBe(404);
      expect(missing.body.error.details[0]).toMatchObject({ index: 0 });
      const forbidden = await alice.client.post('/api/v1/users/batch', {
        operations: [
          { op: 'update', id: alice.id, data: { age: 30 } },
          { op: 'create', data: { name: 'Nope', email: `${unique()}@example.com` } },
        ],
      });
      expect(forbidden.status).toBe(403);
      expect(forbidden.body.error.details[0]).toMatchObject({ index: 1 });
      expect((await storedUser(t, alice.id))?.age).not.toBe(30);
    });

    it('rejects more than 100 operations and an empty list (422)', async () => {
      const ops = Array.from({ length: 101 }, (_, i) => ({
        op: 'create',
        data: { name: `n${i}`, email: `${unique()}@example.com` },
      }));
      expect((await admin.post('/api/v1/users/batch', { operations: ops })).status).toBe(422);
      expect((await admin.post('/api/v1/users/batch', { operations: [] })).status).toBe(422);
    });
  });

  describe('OPTIONS and CORS', () => {
    it('OPTIONS /users and /users/{id} answer 200 with Allow', async () => {
      const list = await client(t.url).options('/api/v1/users');
      expect(list.status).toBe(200);
      expect(list.headers.get('allow')).toBe('GET, HEAD, POST, OPTIONS');
      const one = await client(t.url).options(`/api/v1/users/${alice.id}`);
      expect(one.status).toBe(200);
      expect(one.headers.get('allow')).toBe('GET, HEAD, PUT, PATCH, DELETE, OPTIONS');
    });

    it('answers a CORS preflight from an allowed origin with 200 and Access-Control-Allow-*', async () => {
      const res = await client(t.url).options('/api/v1/users', {
        headers: {
          origin: 'https://studio.apollographql.com',
          'access-control-request-method': 'POST',
          'access-control-request-headers': 'authorization,content-type',
        },
      });
      expect(res.status).toBe(200);
      expect(res.headers.get('access-control-allow-origin')).toBe(
        'https://studio.apollographql.com',
      );
      expect(res.headers.get('access-control-allow-methods')).toContain('POST');
      expect(res.headers.get('access-control-allow-headers')?.toLowerCase()).toContain(
        'authorization',
      );
      const local = await client(t.url).options('/api/v1/users', {
        headers: { origin: 'http://localhost:5173', 'access-control-request-method': 'GET' },
      });
      expect(local.headers.get('access-control-allow-origin')).toBe('http://localhost:5173');
    });

    it('gives no CORS grant to an origin that is not allowed', async () => {
      const res = await client(t.url).options('/api/v1/users', {
        headers: { origin: 'https://evil.example', 'access-control-request-method': 'GET' },
      });
      expect(res.headers.get('access-control-allow-origin')).toBeNull();
    });
  });

  describe('GET /users/{id}/orders', () => {
    it('follows the permission rules: own for USER, any for ADMIN, 403 for others, 404 unknown', async () => {
      const own = await alice.client.get(`/api/v1/users/${alice.id}/orders`);
      expect(own.status).toBe(200);
      expect(own.body).toMatchObject({
        data: expect.any(Array),
        meta: { page: 1, limit: 20, total: expect.any(Number) },
      });
      expect((await admin.get(`/api/v1/users/${alice.id}/orders`)).status).toBe(200);
      expect((await bob.client.get(`/api/v1/users/${alice.id}/orders`)).status).toBe(403);
      expect((await guest.client.get(`/api/v1/users/${guest.id}/orders`)).status).toBe(403);
      expect((await admin.get('/api/v1/users/usr_01ARZ3NDEKTSV4RRFFQ69G5FAV/orders')).status).toBe(
        404,
      );
    });
  });
});

describe('500 without internals', () => {
  it('answers internal_error with a request id and no SQL or stack when the database is gone', async () => {
    const t = await startApp();
    const admin = await adminClient(t.url);
    const me = await admin.get('/api/v1/auth/me');
    await t.app.get(DataSource).destroy();
    const res = await admin.get(`/api/v1/users/${me.body.data.id}`, {
      headers: { 'x-request-id': 'trace-me-123' },
    });
    expect(res.status).toBe(500);
    expect(res.body.error.code).toBe('internal_error');
    expect(res.body.error.request_id).toBe('trace-me-123');
    expect(res.headers.get('x-request-id')).toBe('trace-me-123');
    expect(res.text).not.toMatch(/SELECT|sqlite|postgres|at .*\.js|stack/i);
    await t.close();
  });
});
