import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DatabaseService } from '../src/database/database.service.js';
import { AuditService } from '../src/audit/audit.service.js';
import { startApp, type TestApp } from './helpers/app.js';
import {
  adminClient,
  createApiKey,
  createUser,
  unique,
  type CreatedUser,
} from './helpers/factories.js';
import { client, type Client, type TestResponse } from './helpers/http.js';
import { codes, gql } from './graphql-client.js';
import { connect } from './subscriptions-helpers.js';

/**
 * Admin dashboards (docs/admin.md): the orders list across users, the user search, the audit log
 * and the exports, over real HTTP on the configured database.
 */
describe('admin dashboards', () => {
  let t: TestApp;
  let admin: Client;
  let alice: CreatedUser;
  let bob: CreatedUser;
  const orders: { id: string; user: string; total: number; created_at: string }[] = [];

  async function order(u: CreatedUser, cents: number) {
    const res = await admin.post(`/api/v1/users/${u.id}/orders`, {
      currency: 'EUR',
      items: [{ sku: 'SKU-1', quantity: 1, unit_price_cents: cents }],
    });
    expect(res.status, res.text).toBe(201);
    orders.push({
      id: res.body.data.id,
      user: u.id,
      total: cents,
      created_at: res.body.data.created_at,
    });
    return res.body.data.id as string;
  }

  /** The audit entries of one action about one target. */
  async function entries(action: string, targetId: string) {
    const res = await admin.get(
      `/api/v1/audit-events?action=${action}&target_id=${encodeURIComponent(targetId)}`,
    );
    expect(res.status, res.text).toBe(200);
    return res.body.data as Record<string, any>[];
  }

  beforeAll(async () => {
    t = await startApp();
    admin = await adminClient(t.url);
    const tag = unique('z');
    alice = await createUser(t.url, {
      name: `Alice ${tag} Wonder`,
      email: `qx.${tag}@example.com`,
    });
    bob = await createUser(t.url, { name: `Bob ${tag} Builder`, email: `bob.${tag}@example.com` });
    for (const cents of [100, 500, 900]) {
      await order(alice, cents);
    }
    for (const cents of [200, 700]) {
      await order(bob, cents);
    }
  });

  afterAll(async () => {
    await t?.close();
  });

  describe('GET /api/v1/orders', () => {
    const mine = (body: any, ids: string[]) =>
      (body.data as { id: string }[]).map((o) => o.id).filter((id) => ids.includes(id));
    const ids = () => orders.map((o) => o.id);

    it('an ADMIN lists every order, oldest first, with an exact total', async () => {
      const res = await admin.get('/api/v1/orders?limit=100');
      expect(res.status).toBe(200);
      expect(mine(res.body, ids())).toEqual(ids());
      expect(res.body.meta.total).toBeGreaterThanOrEqual(5);
      expect(res.body.meta.total).toBe(res.body.data.length);
    });

    it('a USER lists their own orders; another user_id is 403; their own user_id is fine', async () => {
      const own = await alice.client.get('/api/v1/orders');
      expect(own.status).toBe(200);
      expect(own.body.data.every((o: any) => o.user_id === alice.id)).toBe(true);
      expect(own.body.meta.total).toBe(3);
      const other = await alice.client.get(`/api/v1/orders?user_id=${bob.id}`);
      expect(other.status).toBe(403);
      expect(other.body.error.code).toBe('forbidden');
      const self = await alice.client.get(`/api/v1/orders?user_id=${alice.id}`);
      expect(self.status).toBe(200);
      expect(self.body.meta.total).toBe(3);
    });

    it('a GUEST gets 403 and an anonymous caller 401', async () => {
      const guest = await createUser(t.url, { role: 'GUEST' });
      expect((await guest.client.get('/api/v1/orders')).status).toBe(403);
      expect((await client(t.url).get('/api/v1/orders')).status).toBe(401);
    });

    it('filters by user_id and status', async () => {
      const res = await admin.get(`/api/v1/orders?user_id=${bob.id}`);
      expect(res.body.data.map((o: any) => o.id)).toEqual(
        orders.filter((o) => o.user === bob.id).map((o) => o.id),
      );
      expect(res.body.meta.total).toBe(orders.filter((o) => o.user === bob.id).length);
      const paidId = orders[0].id;
      expect((await admin.patch(`/api/v1/orders/${paidId}`, { status: 'paid' })).status).toBe(200);
      const paid = await admin.get(`/api/v1/orders?status=paid&user_id=${alice.id}`);
      expect(paid.body.data.map((o: any) => o.id)).toEqual([paidId]);
      expect(paid.body.meta.total).toBe(1);
      const allPaid = await admin.get('/api/v1/orders?status=paid&limit=100');
      expect(allPaid.body.data.every((o: any) => o.status === 'paid')).toBe(true);
      expect(allPaid.body.data.map((o: any) => o.id)).toContain(paidId);
      expect(allPaid.body.meta.total).toBe(allPaid.body.data.length);
    });

    it('total bounds are inclusive', async () => {
      const res = await admin.get(
        `/api/v1/orders?user_id=${alice.id}&min_total_cents=500&max_total_cents=900`,
      );
      expect(res.body.data.map((o: any) => o.total_cents)).toEqual([500, 900]);
      expect(res.body.meta.total).toBe(2);
      const one = await admin.get(`/api/v1/orders?user_id=${alice.id}&max_total_cents=100`);
      expect(one.body.data.map((o: any) => o.total_cents)).toEqual([100]);
    });

    it('created_after is strictly later, created_before up to and including', async () => {
      const mid = orders[1];
      const after = await admin.get(
        `/api/v1/orders?user_id=${alice.id}&created_after=${encodeURIComponent(mid.created_at)}`,
      );
      expect(after.body.data.map((o: any) => o.id)).toEqual([orders[2].id]);
      expect(after.body.meta.total).toBe(1);
      const before = await admin.get(
        `/api/v1/orders?user_id=${alice.id}&created_before=${encodeURIComponent(mid.created_at)}`,
      );
      expect(before.body.data.map((o: any) => o.id)).toEqual([orders[0].id, orders[1].id]);
    });

    it('sorts by total_cents and created_at, both directions, and pages by cursor', async () => {
      const q = `user_id=${alice.id}`;
      const desc = await admin.get(`/api/v1/orders?${q}&sort=-total_cents`);
      expect(desc.body.data.map((o: any) => o.total_cents)).toEqual([900, 500, 100]);
      const asc = await admin.get(`/api/v1/orders?${q}&sort=total_cents`);
      expect(asc.body.data.map((o: any) => o.total_cents)).toEqual([100, 500, 900]);
      const newest = await admin.get(`/api/v1/orders?${q}&sort=-created_at`);
      expect(newest.body.data.map((o: any) => o.id)).toEqual(
        orders
          .slice(0, 3)
          .map((o) => o.id)
          .reverse(),
      );
      // cursor paging through Link rel="next"
      const seen: number[] = [];
      let url: string | undefined = `/api/v1/orders?${q}&sort=-total_cents&limit=1`;
      while (url) {
        const page: TestResponse = await admin.get(url);
        expect(page.status).toBe(200);
        seen.push(...page.body.data.map((o: any) => o.total_cents));
        const next: string | undefined = /<([^>]+)>; rel="next"/.exec(
          page.headers.get('link') ?? '',
        )?.[1];
        url = next ? next.replace(/^http:\/\/atrium\.test/, '') : undefined;
      }
      expect(seen).toEqual([900, 500, 100]);
    });

    it('bad filter values are 400 naming each parameter', async () => {
      const res = await admin.get(
        '/api/v1/orders?created_after=yesterday&min_total_cents=-1&user_id=nope&status=lost&sort=name',
      );
      expect(res.status).toBe(400);
      const fields = res.body.error.details.map((d: any) => d.field).sort();
      expect(fields).toEqual(['created_after', 'min_total_cents', 'sort', 'status', 'user_id']);
    });

    it('orders of a deleted user leave the list and its totals', async () => {
      const carol = await createUser(t.url);
      await order(carol, 300);
      const before = (await admin.get('/api/v1/orders')).body.meta.total as number;
      const byStatus = (await admin.get('/api/v1/orders?status=pending')).body.meta.total as number;
      expect((await admin.delete(`/api/v1/users/${carol.id}`)).status).toBe(204);
      // carol's orders are gone from every list: the other tests of this file no longer expect them
      orders.splice(0, orders.length, ...orders.filter((o) => o.user !== carol.id));
      const after = await admin.get('/api/v1/orders?limit=100');
      expect(after.body.meta.total).toBe(before - 1);
      expect(after.body.data.some((o: any) => o.user_id === carol.id)).toBe(false);
      expect((await admin.get('/api/v1/orders?status=pending')).body.meta.total).toBe(byStatus - 1);
      const gone = await admin.get(`/api/v1/orders?user_id=${carol.id}`);
      expect(gone.body).toMatchObject({ data: [], meta: { total: 0 } });
    });
  });

  describe('user search (?q=)', () => {
    it('every word must start a word of the name', async () => {
      const tag = (alice.body.name as string).split(' ')[1];
      const res = await bob.client.get(
        `/api/v1/users?q=${encodeURIComponent(`ali ${tag.slice(0, 6)}`)}`,
      );
      expect(res.status).toBe(200);
      expect(res.body.data.map((u: any) => u.id)).toEqual([alice.id]);
      expect(res.body.meta.total).toBe(1);
      const both = await admin.get(`/api/v1/users?q=${tag.toUpperCase()}`);
      expect(both.body.data.map((u: any) => u.id).sort()).toEqual([alice.id, bob.id].sort());
      const none = await admin.get(`/api/v1/users?q=${encodeURIComponent(`lice ${tag}`)}`);
      expect(none.body.data).toEqual([]);
    });

    it('matches the start of the email for ADMINs only', async () => {
      const prefix = alice.email.slice(0, alice.email.indexOf('@') + 3);
      const asAdmin = await admin.get(`/api/v1/users?q=${encodeURIComponent(prefix)}`);
      expect(asAdmin.body.data.map((u: any) => u.id)).toEqual([alice.id]);
      const asUser = await bob.client.get(`/api/v1/users?q=${encodeURIComponent(prefix)}`);
      expect(asUser.status).toBe(200);
      expect(asUser.body.data).toEqual([]);
      expect(asUser.body.meta.total).toBe(0);
      // a word that only starts the email never matches for a USER, even beside a name word
      const tag = (alice.body.name as string).split(' ')[1];
      const mixed = `/api/v1/users?q=${encodeURIComponent(`${tag} qx`)}`;
      expect((await bob.client.get(mixed)).body.data).toEqual([]);
      expect((await admin.get(mixed)).body.data.map((u: any) => u.id)).toEqual([alice.id]);
    });

    it('an empty q, or q with sort or cursor, is 400', async () => {
      for (const q of ['q=', 'q=%20%20', 'q=a&sort=name']) {
        const res = await admin.get(`/api/v1/users?${q}`);
        expect(res.status, q).toBe(400);
        expect(res.body.error.code).toBe('bad_request');
      }
    });
  });

  describe('audit log', () => {
    it('records a user created, its role changed and password set, and its deletion', async () => {
      const email = `${unique()}@example.com`;
      const created = await admin.post('/api/v1/users', {
        name: 'Audited',
        email,
        password: 'audited-password-1',
      });
      const id = created.body.data.id as string;
      const [c] = await entries('user.created', id);
      expect(c).toMatchObject({
        action: 'user.created',
        target: { type: 'user', id },
        request_id: created.headers.get('x-request-id'),
        changes: { name: [null, 'Audited'], email: [null, email], role: [null, 'USER'] },
      });
      expect(c.id).toMatch(/^aud_/);
      expect(c.actor.type).toBe('user');
      expect(JSON.stringify(c.changes)).not.toMatch(/password|argon|hash/i);

      const role = await admin.patch(`/api/v1/users/${id}`, { role: 'ADMIN' });
      const roleEntries = await entries('user.role_changed', id);
      expect(roleEntries).toHaveLength(1);
      expect(roleEntries[0]).toMatchObject({
        changes: { role: ['USER', 'ADMIN'] },
        request_id: role.headers.get('x-request-id'),
      });

      const pw = await admin.patch(`/api/v1/users/${id}`, { password: 'another-password-2' });
      const pwEntries = await entries('user.password_set', id);
      expect(pwEntries).toHaveLength(1);
      expect(pwEntries[0].request_id).toBe(pw.headers.get('x-request-id'));
      expect(pwEntries[0].changes).toEqual({});

      const del = await admin.delete(`/api/v1/users/${id}`);
      const delEntries = await entries('user.deleted', id);
      expect(delEntries).toHaveLength(1);
      expect(delEntries[0].request_id).toBe(del.headers.get('x-request-id'));
    });

    it('a change over GraphQL records its HTTP request id and address; over a WebSocket neither', async () => {
      const u = await createUser(t.url);
      const auth = { bearer: (await tokenHeader()).slice('Bearer '.length) };
      const mutation = (role: string) =>
        `mutation { updateUser(id: "${u.id}", input: { role: ${role} }) { id role } }`;
      const overHttp = await gql(t.url, mutation('ADMIN'), { auth });
      expect(overHttp.body.errors).toBeUndefined();
      const [http] = await entries('user.role_changed', u.id);
      expect(http).toMatchObject({
        changes: { role: ['USER', 'ADMIN'] },
        request_id: overHttp.headers.get('x-request-id'),
      });
      expect(http.ip).toMatch(/^(::ffff:)?127\.0\.0\.1$/);

      const socket = await connect(t.url, auth);
      try {
        const result = await new Promise<{ errors?: unknown }>((resolve, reject) => {
          let value: { errors?: unknown } = {};
          socket.client.subscribe(
            { query: mutation('USER') },
            { next: (v) => (value = v), error: reject, complete: () => resolve(value) },
          );
        });
        expect(result.errors).toBeUndefined();
      } finally {
        await socket.dispose();
      }
      const both = await entries('user.role_changed', u.id);
      expect(both).toHaveLength(2);
      expect(both[0]).toMatchObject({
        changes: { role: ['ADMIN', 'USER'] },
        request_id: null,
        ip: null,
      });
    });

    it('a refused change writes nothing; the last-admin refusal writes admin.removal_refused', async () => {
      const u = await createUser(t.url);
      const refused = await u.client.patch(`/api/v1/users/${u.id}`, { role: 'ADMIN' });
      expect(refused.status).toBe(403);
      expect(await entries('user.role_changed', u.id)).toEqual([]);

      const me = await admin.get('/api/v1/auth/me');
      const adminId = me.body.data.id as string;
      const admins = await admin.get('/api/v1/users?role=ADMIN&limit=100');
      // demote every other ADMIN so this one is the last (they were made by tests in this file)
      for (const other of admins.body.data) {
        if (other.id !== adminId) {
          expect((await admin.patch(`/api/v1/users/${other.id}`, { role: 'USER' })).status).toBe(
            200,
          );
        }
      }
      const last = await admin.patch(`/api/v1/users/${adminId}`, { role: 'USER' });
      expect(last.status).toBe(409);
      const refusals = await entries('admin.removal_refused', adminId);
      expect(refusals).toHaveLength(1);
      expect(refusals[0]).toMatchObject({
        changes: { role: ['ADMIN', 'USER'] },
        request_id: last.headers.get('x-request-id'),
      });
      expect(await entries('user.role_changed', adminId)).toEqual([]);
    });

    it('records API keys created and revoked, with the key as actor when a key acts', async () => {
      const u = await createUser(t.url);
      const key = await createApiKey(u.client, { name: 'audited key' });
      const [c] = await entries('api_key.created', key.id);
      expect(c).toMatchObject({
        actor: { type: 'user', id: u.id },
        changes: { name: [null, 'audited key'], role: [null, 'USER'] },
      });
      expect(JSON.stringify(c)).not.toContain(key.key);
      const byKey = client(t.url, { apiKey: key.key });
      const child = await createApiKey(byKey);
      const [cc] = await entries('api_key.created', child.id);
      expect(cc.actor).toEqual({ type: 'api_key', id: key.id });
      const revoke = await u.client.delete(`/api/v1/api-keys/${child.id}`);
      expect(revoke.status).toBe(204);
      const [r] = await entries('api_key.revoked', child.id);
      expect(r.request_id).toBe(revoke.headers.get('x-request-id'));
      // revoking again changes nothing and writes nothing
      await u.client.delete(`/api/v1/api-keys/${child.id}`);
      expect(await entries('api_key.revoked', child.id)).toHaveLength(1);
    });

    it('records OAuth clients created and deleted, without their secret', async () => {
      const res = await admin.post('/api/v1/oauth/clients', {
        name: 'Audited app',
        redirect_uris: ['https://app.example.com/cb'],
        scopes: ['users:read'],
      });
      expect(res.status, res.text).toBe(201);
      const id = res.body.data.client_id as string;
      const [c] = await entries('oauth_client.created', id);
      expect(c.changes.name).toEqual([null, 'Audited app']);
      expect(JSON.stringify(c)).not.toContain(res.body.data.client_secret);
      const del = await admin.delete(`/api/v1/oauth/clients/${id}`);
      expect(del.status).toBe(204);
      const [d] = await entries('oauth_client.deleted', id);
      expect(d.request_id).toBe(del.headers.get('x-request-id'));
    });

    it('records an OAuth client edited and its secret rotated, without either secret', async () => {
      const res = await admin.post('/api/v1/oauth/clients', {
        name: 'Edited app',
        redirect_uris: ['https://app.example.com/cb'],
        scopes: ['users:read'],
      });
      expect(res.status, res.text).toBe(201);
      const id = res.body.data.client_id as string;
      const patched = await admin.patch(`/api/v1/oauth/clients/${id}`, {
        name: 'Edited app 2',
        scopes: ['users:read', 'posts:read'],
      });
      expect(patched.status, patched.text).toBe(200);
      const [u] = await entries('oauth_client.updated', id);
      expect(u.changes).toEqual({
        name: ['Edited app', 'Edited app 2'],
        scopes: [['users:read'], ['users:read', 'posts:read']],
      });
      expect(u.request_id).toBe(patched.headers.get('x-request-id'));
      const rotated = await admin.post(`/api/v1/oauth/clients/${id}/secret`, {});
      expect(rotated.status, rotated.text).toBe(200);
      const [r] = await entries('oauth_client.secret_rotated', id);
      expect(r.request_id).toBe(rotated.headers.get('x-request-id'));
      const text = JSON.stringify(r);
      expect(text).not.toContain(res.body.data.client_secret);
      expect(text).not.toContain(rotated.body.data.client_secret);
    });

    it('records an order status set by an ADMIN, not one set by its owner', async () => {
      const id = await order(bob, 1234);
      const paid = await admin.patch(`/api/v1/orders/${id}`, { status: 'paid' });
      const [e] = await entries('order.status_changed', id);
      expect(e).toMatchObject({
        target: { type: 'order', id },
        changes: { status: ['pending', 'paid'] },
        request_id: paid.headers.get('x-request-id'),
      });
      const own = await order(bob, 99);
      expect(
        (await bob.client.patch(`/api/v1/orders/${own}`, { status: 'cancelled' })).status,
      ).toBe(200);
      expect(await entries('order.status_changed', own)).toEqual([]);
    });

    it('lists newest first with since (>) and until (<=), ADMIN only, and purges past the retention', async () => {
      // entries of its own, whatever ran before (three API keys created: three entries)
      for (const name of ['one', 'two', 'three']) {
        expect((await admin.post('/api/v1/api-keys', { name: `audit ${name}` })).status).toBe(201);
      }
      const all = await admin.get('/api/v1/audit-events?limit=100');
      expect(all.status).toBe(200);
      const ats = all.body.data.map((e: any) => e.at);
      expect([...ats].sort().reverse()).toEqual(ats);
      const pivot = all.body.data[1];
      const since = await admin.get(
        `/api/v1/audit-events?since=${encodeURIComponent(pivot.at)}&limit=100`,
      );
      expect(since.body.data.every((e: any) => e.at > pivot.at)).toBe(true);
      const until = await admin.get(
        `/api/v1/audit-events?until=${encodeURIComponent(pivot.at)}&limit=100`,
      );
      expect(until.body.data.map((e: any) => e.id)).toContain(pivot.id);
      expect(until.body.data.every((e: any) => e.at <= pivot.at)).toBe(true);
      const actor = await admin.get(`/api/v1/audit-events?actor_id=${bob.id}`);
      expect(actor.body.data.every((e: any) => e.actor.id === bob.id)).toBe(true);
      expect((await bob.client.get('/api/v1/audit-events')).status).toBe(403);
      expect((await admin.get('/api/v1/audit-events?since=soon')).status).toBe(400);
      // cursor paging
      const first = await admin.get('/api/v1/audit-events?limit=2');
      const next = /<([^>]+)>; rel="next"/.exec(first.headers.get('link') ?? '')?.[1];
      const second = await admin.get(next!.replace(/^http:\/\/atrium\.test/, ''));
      expect(second.body.data[0].id).toBe(all.body.data[2].id);
      // retention: entries older than AUDIT_RETENTION_DAYS go, the others stay
      const audit = t.app.get(AuditService);
      const db = t.app.get(DatabaseService);
      const count = async () =>
        Number((await db.query<{ n: number }>('SELECT COUNT(*) AS n FROM audit_events'))[0].n);
      const n = await count();
      expect(await audit.purge(Date.now())).toBe(0);
      expect(await audit.purge(Date.now() + 366 * 86_400_000)).toBe(n);
      expect(await count()).toBe(0);
    });
  });

  describe('exports', () => {
    it('streams orders as NDJSON by default, with the list filters', async () => {
      const res = await fetch(
        `${t.url}/api/v1/orders/export?user_id=${alice.id}&sort=-total_cents`,
        {
          headers: { authorization: await tokenHeader() },
        },
      );
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toBe('application/x-ndjson');
      const lines = (await res.text())
        .trimEnd()
        .split('\n')
        .map((l) => JSON.parse(l));
      expect(lines.map((o) => o.total_cents)).toEqual([900, 500, 100]);
      expect(Object.keys(lines[0])).toEqual([
        'id',
        'user_id',
        'status',
        'items',
        'total_cents',
        'currency',
        'created_at',
        'updated_at',
      ]);
    });

    it('streams users as CSV with a header line', async () => {
      const res = await fetch(`${t.url}/api/v1/users/export?role=USER`, {
        headers: { authorization: await tokenHeader(), accept: 'text/csv' },
      });
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toMatch(/^text\/csv/);
      const lines = (await res.text()).trimEnd().split('\r\n');
      expect(lines[0]).toBe('id,name,email,role,age,created_at,updated_at');
      expect(
        lines.some((l) =>
          l.startsWith(`${alice.id},${String(alice.body.name)},${alice.email},USER`),
        ),
      ).toBe(true);
      expect(lines.slice(1).every((l) => l.split(',')[3] === 'USER')).toBe(true);
    });

    it('is ADMIN only, 406 for another media type, 400 for a bad filter', async () => {
      const user = await fetch(`${t.url}/api/v1/orders/export`, {
        headers: { authorization: `Bearer ${alice.token}` },
      });
      expect(user.status).toBe(403);
      const xml = await fetch(`${t.url}/api/v1/users/export`, {
        headers: { authorization: await tokenHeader(), accept: 'application/xml' },
      });
      expect(xml.status).toBe(406);
      const bad = await fetch(`${t.url}/api/v1/orders/export?created_before=never`, {
        headers: { authorization: await tokenHeader() },
      });
      expect(bad.status).toBe(400);
      expect((await fetch(`${t.url}/api/v1/users/export`)).status).toBe(401);
    });
  });

  describe('GraphQL', () => {
    const adminAuth = async () => ({ bearer: (await tokenHeader()).slice('Bearer '.length) });

    it('orders(filter, first, after, orderBy) pages the list across users', async () => {
      const query = `query($f: OrderFilter, $first: Int, $after: String) {
        orders(filter: $f, first: $first, after: $after, orderBy: {field: TOTAL_CENTS, direction: DESC}) {
          totalCount nodes { id totalCents } pageInfo { hasNextPage endCursor } } }`;
      const f = { userId: alice.id, minTotalCents: 500 };
      const first = await gql(t.url, query, {
        auth: await adminAuth(),
        variables: { f, first: 1 },
      });
      expect(first.body.errors).toBeUndefined();
      expect(first.body.data.orders).toMatchObject({
        totalCount: 2,
        nodes: [{ totalCents: 900 }],
        pageInfo: { hasNextPage: true },
      });
      const second = await gql(t.url, query, {
        auth: await adminAuth(),
        variables: { f, first: 1, after: first.body.data.orders.pageInfo.endCursor },
      });
      expect(second.body.data.orders).toMatchObject({
        nodes: [{ totalCents: 500 }],
        pageInfo: { hasNextPage: false },
      });
      const since = await gql(
        t.url,
        `query($f: OrderFilter) { orders(filter: $f) { nodes { id } } }`,
        {
          auth: await adminAuth(),
          variables: { f: { userId: alice.id, createdAfter: orders[1].created_at } },
        },
      );
      expect(since.body.data.orders.nodes).toEqual([{ id: orders[2].id }]);
    });

    it('orders: a USER naming another user is FORBIDDEN, their own list is theirs', async () => {
      const other = await gql(
        t.url,
        `query($u: ID) { orders(filter: {userId: $u}) { totalCount } }`,
        {
          auth: { bearer: alice.token },
          variables: { u: bob.id },
        },
      );
      expect(codes(other.body)).toEqual(['FORBIDDEN']);
      expect(other.body.data?.orders ?? null).toBeNull();
      const own = await gql(t.url, '{ orders { totalCount nodes { id } } }', {
        auth: { bearer: alice.token },
      });
      expect(own.body.data.orders.totalCount).toBe(3);
    });

    it('users(query:) matches emails for ADMINs only', async () => {
      const q = `query($q: String) { users(query: $q) { totalCount nodes { id } } }`;
      const prefix = alice.email.slice(0, 6);
      const asAdmin = await gql(t.url, q, { auth: await adminAuth(), variables: { q: prefix } });
      expect(asAdmin.body.data.users.nodes.map((u: any) => u.id)).toEqual([alice.id]);
      const asUser = await gql(t.url, q, { auth: { bearer: bob.token }, variables: { q: prefix } });
      expect(asUser.body.data.users).toEqual({ totalCount: 0, nodes: [] });
      const empty = await gql(t.url, q, { auth: await adminAuth(), variables: { q: ' ' } });
      expect(codes(empty.body)).toEqual(['BAD_USER_INPUT']);
    });

    it('auditEvents lists entries (ADMIN only) and a GraphQL change is audited with its request id', async () => {
      const u = await createUser(t.url);
      const res = await gql(
        t.url,
        `mutation($id: ID!) { updateUser(id: $id, input: {role: GUEST}) { id role } }`,
        { auth: await adminAuth(), variables: { id: u.id } },
      );
      expect(res.body.errors).toBeUndefined();
      const list = await gql(
        t.url,
        `query($f: AuditEventFilter) { auditEvents(filter: $f, first: 5) {
          totalCount nodes { action actor { type id } target { id } changes { field old new } requestId } } }`,
        {
          auth: await adminAuth(),
          variables: { f: { targetId: u.id, action: 'user.role_changed' } },
        },
      );
      expect(list.body.errors).toBeUndefined();
      expect(list.body.data.auditEvents.totalCount).toBe(1);
      expect(list.body.data.auditEvents.nodes[0]).toMatchObject({
        action: 'user.role_changed',
        target: { id: u.id },
        changes: [{ field: 'role', old: '"USER"', new: '"GUEST"' }],
        requestId: res.headers.get('x-request-id'),
      });
      const denied = await gql(t.url, '{ auditEvents { totalCount } }', {
        auth: { bearer: bob.token },
      });
      expect(codes(denied.body)).toEqual(['FORBIDDEN']);
    });
  });

  let cachedToken: string | undefined;
  async function tokenHeader(): Promise<string> {
    if (!cachedToken) {
      const me = await admin.get('/api/v1/auth/me');
      expect(me.status).toBe(200);
      const res = await client(t.url).post('/api/v1/auth/token', {
        email: 'admin@atrium.test',
        password: 'admin-password-123',
      });
      cachedToken = res.body.access_token as string;
    }
    return `Bearer ${cachedToken}`;
  }
});
