import { DataSource } from 'typeorm';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_EMAIL, ADMIN_PASSWORD, startApp, type TestApp } from './helpers/app.js';
import {
  adminClient,
  createUser,
  tokenFor,
  unique,
  type CreatedUser,
} from './helpers/factories.js';
import { request, type Client } from './helpers/http.js';
import {
  eventually,
  settledDeliveries,
  WebhookReceiver,
  type ReceivedWebhook,
} from './helpers/webhook-receiver.js';
import { codes, gql } from './graphql-client.js';

const EVENT_ID = /^evt_[0-9A-HJKMNP-TV-Z]{26}$/;

/** Verifies a delivery as a receiver would, with the `standardwebhooks` package. */
function verify(secret: string, got: ReceivedWebhook): unknown {
  return new Webhook(secret).verify(got.body, {
    'webhook-id': String(got.headers['webhook-id']),
    'webhook-timestamp': String(got.headers['webhook-timestamp']),
    'webhook-signature': String(got.headers['webhook-signature']),
  });
}

async function stored(t: TestApp, sql: string, params: unknown[] = []) {
  const ds = t.app.get(DataSource);
  const pg = ds.options.type === 'postgres';
  let n = 0;
  return ds.query<Record<string, unknown>[]>(
    pg ? sql.replace(/\?/g, () => `$${++n}`) : sql,
    params,
  );
}

describe('webhooks: endpoints, events, signing, retries (/api/v1/webhooks)', () => {
  let t: TestApp;
  let admin: Client;
  let alice: CreatedUser;
  let receiver: WebhookReceiver;

  beforeAll(async () => {
    receiver = await new WebhookReceiver().start();
    t = await startApp({
      WEBHOOK_ALLOWED_HOSTS: '127.0.0.1',
      WEBHOOK_RETRY_SCHEDULE_S: '0.2,0.2,0.2',
      WEBHOOK_TIMEOUT_MS: '1500',
    });
    admin = await adminClient(t.url);
    alice = await createUser(t.url);
  });

  afterAll(async () => {
    await t?.close();
    await receiver?.close();
  });

  async function register(path: string, events: string[], extra: Record<string, unknown> = {}) {
    const res = await admin.post('/api/v1/webhooks', { url: receiver.url(path), events, ...extra });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    return res.body.data as { id: string; secret: string; [k: string]: unknown };
  }

  it('registers an endpoint: 201 with Location, a whsec_ secret shown once, and the stored row', async () => {
    const path = `/${unique('reg')}`;
    const res = await admin.post('/api/v1/webhooks', {
      url: receiver.url(path),
      events: ['post.created', 'post.created', 'user.updated'],
      description: 'sync',
    });
    expect(res.status).toBe(201);
    const body = res.body.data;
    expect(body.id).toMatch(/^whk_[0-9A-HJKMNP-TV-Z]{26}$/);
    expect(body.secret).toMatch(/^whsec_[A-Za-z0-9+/=]{40,}$/);
    expect(body).toMatchObject({
      url: receiver.url(path),
      events: ['post.created', 'user.updated'],
      description: 'sync',
      oauth_client_id: null,
      active: true,
      disabled_reason: null,
    });
    expect(res.headers.get('location')).toBe(`http://atrium.test/api/v1/webhooks/${body.id}`);
    const got = await admin.get(`/api/v1/webhooks/${body.id}`);
    expect(got.status).toBe(200);
    expect(got.body.data.secret).toBeUndefined();
    const [row] = await stored(
      t,
      'SELECT url, active, secret FROM webhook_endpoints WHERE id = ?',
      [body.id],
    );
    expect(row).toMatchObject({ url: receiver.url(path), secret: body.secret });
  });

  it('refuses anonymous callers (401) and non-admins (403), and stores nothing', async () => {
    const before = await stored(t, 'SELECT COUNT(*) AS n FROM webhook_endpoints');
    const anon = await request(t.url, '/api/v1/webhooks', {
      method: 'POST',
      body: { url: receiver.url(), events: ['post.created'] },
    });
    expect(anon.status).toBe(401);
    const user = await alice.client.post('/api/v1/webhooks', {
      url: receiver.url(),
      events: ['post.created'],
    });
    expect(user.status).toBe(403);
    expect((await alice.client.get('/api/v1/webhooks')).status).toBe(403);
    expect((await request(t.url, '/api/v1/webhooks')).status).toBe(401);
    const after = await stored(t, 'SELECT COUNT(*) AS n FROM webhook_endpoints');
    expect(Number(after[0].n)).toBe(Number(before[0].n));
  });

  it('validates the body: unknown event types, unknown members, an unknown OAuth client (422)', async () => {
    const bad = await admin.post('/api/v1/webhooks', { url: receiver.url(), events: ['nope'] });
    expect(bad.status).toBe(422);
    expect(bad.body.error.code).toBe('validation_failed');
    expect(bad.body.error.details[0].field).toMatch(/^events/);
    const empty = await admin.post('/api/v1/webhooks', { url: receiver.url(), events: [] });
    expect(empty.status).toBe(422);
    const extra = await admin.post('/api/v1/webhooks', {
      url: receiver.url(),
      events: ['ping'],
      secret: 'x',
    });
    expect(extra.status).toBe(422);
    const client = await admin.post('/api/v1/webhooks', {
      url: receiver.url(),
      events: ['post.created'],
      oauth_client_id: 'cli_unknown',
    });
    expect(client.status).toBe(422);
    expect(client.body.error.details[0].field).toBe('oauth_client_id');
    const notJson = await request(t.url, '/api/v1/webhooks', {
      method: 'POST',
      rawBody: '{nope',
      headers: { 'content-type': 'application/json' },
      auth: { bearer: alice.token },
    });
    expect(notJson.status).toBe(400);
  });

  it.each([
    ['http on a host that is not allowed', 'http://example.com/hook'],
    ['another scheme', 'ftp://example.com/hook'],
    ['a loopback address not in WEBHOOK_ALLOWED_HOSTS', 'https://127.0.0.2/hook'],
    ['IPv6 loopback', 'https://[::1]/hook'],
    ['a private address', 'https://10.1.2.3/hook'],
    ['a private address (172.16/12)', 'https://172.20.0.1/hook'],
    ['a private address (192.168/16)', 'https://192.168.1.1/hook'],
    ['the cloud metadata address', 'https://169.254.169.254/latest/meta-data'],
    ['a CGNAT address', 'https://100.64.0.1/hook'],
    ['an IPv6 link-local address', 'https://[fe80::1]/hook'],
    ['an IPv6 unique-local address', 'https://[fd00::1]/hook'],
    ['an IPv4-mapped private address', 'https://[::ffff:10.0.0.1]/hook'],
    ['user information in the URL', 'https://user:pw@127.0.0.1/hook'],
    ['a host that does not resolve', 'https://no-such-host.invalid/hook'],
    ['not a URL', 'hook'],
  ])('refuses %s at registration (422 on url) and stores nothing', async (_what, url) => {
    const res = await admin.post('/api/v1/webhooks', { url, events: ['post.created'] });
    expect(res.status, JSON.stringify(res.body)).toBe(422);
    expect(res.body.error.details[0].field).toBe('url');
    const rows = await stored(t, 'SELECT id FROM webhook_endpoints WHERE url = ?', [url]);
    expect(rows).toHaveLength(0);
  });

  it('re-checks the address at each delivery: a host now resolving to a forbidden address is refused', async () => {
    const endpoint = await register(`/${unique('rebind')}`, ['post.created']);
    // what a DNS change would do: the stored URL's host now points at a loopback address not allowed
    await stored(t, 'UPDATE webhook_endpoints SET url = ? WHERE id = ?', [
      `http://127.0.0.2:${receiver.port}/rebind`,
      endpoint.id,
    ]);
    const post = await alice.client.post('/api/v1/posts', { title: 'rebind', body: 'x' });
    expect(post.status).toBe(201);
    const delivery = await eventually(async () => {
      const log = await admin.get(`/api/v1/webhooks/${endpoint.id}/deliveries`);
      const d = log.body.data[0];
      return d && d.attempts >= 1 ? d : undefined;
    });
    expect(delivery.last_error).toMatch(/^refused: the URL/);
    expect(delivery.last_status_code).toBeNull();
    expect(receiver.on('/rebind')).toHaveLength(0);
    await admin.delete(`/api/v1/webhooks/${endpoint.id}`);
  });

  it('delivers each event type with the REST representation, signed (standardwebhooks verifies it)', async () => {
    const path = `/${unique('all')}`;
    const endpoint = await register(path, [
      'user.created',
      'user.updated',
      'user.deleted',
      'order.created',
      'order.status_changed',
      'post.created',
      'post.updated',
      'post.deleted',
      'message.created',
    ]);
    const user = await admin.post('/api/v1/users', {
      name: 'Hooked',
      email: `${unique()}@example.com`,
    });
    expect(user.status).toBe(201);
    const userId = user.body.data.id as string;
    const updated = await admin.patch(`/api/v1/users/${userId}`, { name: 'Hooked again' });
    expect(updated.status).toBe(200);
    const order = await admin.post(`/api/v1/users/${alice.id}/orders`, {
      currency: 'EUR',
      items: [{ sku: 'SKU-1', quantity: 2, unit_price_cents: 500 }],
    });
    expect(order.status, JSON.stringify(order.body)).toBe(201);
    const paid = await admin.patch(`/api/v1/orders/${order.body.data.id}`, { status: 'paid' });
    expect(paid.status, JSON.stringify(paid.body)).toBe(200);
    const post = await alice.client.post('/api/v1/posts', { title: 'T', body: 'B' });
    const postPatched = await alice.client.patch(`/api/v1/posts/${post.body.data.id}`, {
      title: 'T2',
    });
    expect(postPatched.status).toBe(200);
    expect((await alice.client.delete(`/api/v1/posts/${post.body.data.id}`)).status).toBe(204);
    const room = await admin.post('/api/v1/rooms', { name: unique('room') });
    const message = await alice.client.post(`/api/v1/rooms/${room.body.data.id}/messages`, {
      content: 'hello',
    });
    expect(message.status, JSON.stringify(message.body)).toBe(201);
    expect((await admin.delete(`/api/v1/users/${userId}`)).status).toBe(204);

    // the sentinel: one more event, committed after every change above (settledDeliveries says
    // why, once it has arrived and the log is settled, nothing else is on its way to this endpoint)
    const sentinel = await alice.client.post('/api/v1/posts', { title: 'sentinel', body: 'x' });
    expect(sentinel.status).toBe(201);
    const isSentinel = (r: ReceivedWebhook) => r.json?.data?.object?.id === sentinel.body.data.id;
    const got = await receiver.waitFor((r) => r.some((x) => x.path === path && isSentinel(x)));
    const settled = await settledDeliveries(admin, endpoint.id);
    expect(settled).toHaveLength(10);
    expect(receiver.on(path)).toHaveLength(10);
    const mine = receiver.on(path).filter((r) => !isSentinel(r));
    expect(mine).toHaveLength(9);
    const byType = new Map(mine.map((r) => [r.json.type as string, r]));
    const expected: [string, unknown][] = [
      ['user.created', user.body.data],
      ['user.updated', updated.body.data],
      ['user.deleted', { id: userId }],
      ['order.created', order.body.data],
      ['order.status_changed', paid.body.data],
      ['post.created', post.body.data],
      ['post.updated', postPatched.body.data],
      ['post.deleted', postPatched.body.data],
      ['message.created', message.body.data],
    ];
    for (const [type, object] of expected) {
      const r = byType.get(type);
      expect(r, type).toBeDefined();
      expect(r!.json.data.object, type).toEqual(object);
      expect(r!.json.id).toMatch(EVENT_ID);
      expect(r!.headers['webhook-id']).toBe(r!.json.id);
      expect(r!.headers['content-type']).toBe('application/json');
      expect(r!.headers['user-agent']).toBe('Atrium-Webhooks/1');
      expect(Math.abs(Number(r!.headers['webhook-timestamp']) - Date.now() / 1000)).toBeLessThan(
        60,
      );
      expect(r!.headers['webhook-signature']).toMatch(/^v1,[A-Za-z0-9+/=]+$/);
      expect(verify(endpoint.secret, r!)).toEqual(r!.json);
      expect(Date.parse(r!.json.created_at)).not.toBeNaN();
    }
    // a wrong secret or a changed body does not verify
    const one = byType.get('post.created')!;
    expect(() => verify(`whsec_${Buffer.alloc(32, 7).toString('base64')}`, one)).toThrow();
    expect(() =>
      verify(endpoint.secret, { ...one, body: one.body.replace('"T"', '"X"') }),
    ).toThrow();
    // the delivery log shows every delivery as succeeded after one attempt (the outcomes are
    // written shortly after the receiver answered)
    const log = await eventually(async () => {
      const res = await admin.get(`/api/v1/webhooks/${endpoint.id}/deliveries?limit=100`);
      return res.body.data.some((d: { status: string }) => d.status === 'pending')
        ? undefined
        : res;
    });
    expect(log.status).toBe(200);
    expect(log.body.data).toHaveLength(10);
    for (const d of log.body.data) {
      expect(d).toMatchObject({ status: 'succeeded', attempts: 1, last_status_code: 200 });
      expect(d.next_attempt_at).toBeNull();
      expect(typeof d.last_duration_ms).toBe('number');
    }
    expect(got.length).toBeGreaterThan(0);
  });

  it('does not send an event to an endpoint that did not subscribe to its type, nor a rolled-back change', async () => {
    const path = `/${unique('only')}`;
    const endpoint = await register(path, ['order.created']);
    const post = await alice.client.post('/api/v1/posts', { title: 'no', body: 'x' });
    expect(post.status).toBe(201);
    // a refused change (USER changing another user's role) writes no event
    const refused = await alice.client.patch(`/api/v1/users/${alice.id}`, { role: 'ADMIN' });
    expect(refused.status).toBe(403);
    // the sentinel: an order.created, committed after the post (settledDeliveries says why the
    // post's delivery, had it been due, would be in the log by the time the sentinel arrived)
    const sentinel = await alice.client.post(`/api/v1/users/${alice.id}/orders`, {
      currency: 'EUR',
      items: [{ sku: 'SENTINEL', quantity: 1, unit_price_cents: 100 }],
    });
    expect(sentinel.status, JSON.stringify(sentinel.body)).toBe(201);
    await receiver.waitFor((r) => r.some((x) => x.path === path));
    const log = await settledDeliveries(admin, endpoint.id);
    expect(log.map((d) => d.type)).toEqual(['order.created']);
    expect(receiver.on(path).map((r) => r.json.data.object.id)).toEqual([sentinel.body.data.id]);
  });

  it('retries a failed delivery with the same webhook-id until it succeeds, and logs each attempt', async () => {
    const path = `/${unique('retry')}`;
    const endpoint = await register(path, ['post.created']);
    receiver.answer = (req, nth) =>
      req.path === path && nth <= 2 ? { status: 503 } : { status: 200 };
    try {
      const post = await alice.client.post('/api/v1/posts', { title: 'retry', body: 'x' });
      expect(post.status).toBe(201);
      const got = await receiver.waitFor((r) => r.filter((x) => x.path === path).length >= 3);
      const attempts = got.filter((x) => x.path === path);
      expect(new Set(attempts.map((a) => a.headers['webhook-id'])).size).toBe(1);
      expect(attempts.every((a) => a.json.data.object.id === post.body.data.id)).toBe(true);
      const d = await eventually(async () => {
        const log = await admin.get(`/api/v1/webhooks/${endpoint.id}/deliveries`);
        return log.body.data[0]?.status === 'succeeded' ? log.body.data[0] : undefined;
      });
      expect(d).toMatchObject({
        attempts: 3,
        last_status_code: 200,
        event_id: attempts[0].json.id,
      });
    } finally {
      receiver.answer = () => ({ status: 200 });
    }
  });

  it('marks a delivery failed after the last retry, and shows pending with next_attempt_at before that', async () => {
    const path = `/${unique('fail')}`;
    const endpoint = await register(path, ['post.created']);
    receiver.answer = (req) =>
      req.path === path ? { status: 500, body: 'x'.repeat(200_000) } : { status: 200 };
    try {
      await alice.client.post('/api/v1/posts', { title: 'fail', body: 'x' });
      const pending = await eventually(async () => {
        const log = await admin.get(`/api/v1/webhooks/${endpoint.id}/deliveries`);
        const d = log.body.data[0];
        return d && d.status === 'pending' && d.attempts >= 1 ? d : undefined;
      });
      expect(pending.last_status_code).toBe(500);
      expect(Date.parse(pending.next_attempt_at)).not.toBeNaN();
      const failed = await eventually(async () => {
        const log = await admin.get(`/api/v1/webhooks/${endpoint.id}/deliveries`);
        return log.body.data[0]?.status === 'failed' ? log.body.data[0] : undefined;
      });
      // the first attempt and the three retries of the schedule
      expect(failed).toMatchObject({ attempts: 4, last_status_code: 500, next_attempt_at: null });
      expect(receiver.on(path)).toHaveLength(4);
    } finally {
      receiver.answer = () => ({ status: 200 });
    }
  });

  it('does not follow redirects (a 3xx is a failed attempt)', async () => {
    const path = `/${unique('redir')}`;
    const target = `/${unique('target')}`;
    const endpoint = await register(path, ['post.created']);
    receiver.answer = (req) =>
      req.path === path
        ? { status: 307, headers: { location: receiver.url(target) } }
        : { status: 200 };
    try {
      await alice.client.post('/api/v1/posts', { title: 'redirect', body: 'x' });
      const d = await eventually(async () => {
        const log = await admin.get(`/api/v1/webhooks/${endpoint.id}/deliveries`);
        return log.body.data[0]?.attempts >= 1 ? log.body.data[0] : undefined;
      });
      expect(d.last_status_code).toBe(307);
      expect(d.status).not.toBe('succeeded');
      expect(receiver.on(target)).toHaveLength(0);
    } finally {
      receiver.answer = () => ({ status: 200 });
      await admin.patch(`/api/v1/webhooks/${endpoint.id}`, { active: false });
    }
  });

  it('disables the endpoint at once on 410 Gone, with a reason', async () => {
    const path = `/${unique('gone')}`;
    const endpoint = await register(path, ['post.created']);
    receiver.answer = (req) => (req.path === path ? { status: 410 } : { status: 200 });
    try {
      await alice.client.post('/api/v1/posts', { title: 'gone', body: 'x' });
      const disabled = await eventually(async () => {
        const res = await admin.get(`/api/v1/webhooks/${endpoint.id}`);
        return res.body.data.active === false ? res.body.data : undefined;
      });
      expect(disabled.disabled_reason).toMatch(/410 Gone/);
      const log = await admin.get(`/api/v1/webhooks/${endpoint.id}/deliveries`);
      expect(log.body.data[0]).toMatchObject({
        status: 'failed',
        attempts: 1,
        last_status_code: 410,
      });
      // a disabled endpoint receives nothing more; the sentinel is the same post on an endpoint
      // registered beside it (the fan-out writes both endpoints' rows of an event together, in
      // commit order: settledDeliveries)
      const beside = `/${unique('beside')}`;
      await register(beside, ['post.created']);
      const missed = await alice.client.post('/api/v1/posts', { title: 'gone 2', body: 'x' });
      expect(missed.status).toBe(201);
      const missedId = missed.body.data.id as string;
      await receiver.waitFor((r) =>
        r.some((x) => x.path === beside && x.json?.data?.object?.id === missedId),
      );
      expect(await settledDeliveries(admin, endpoint.id)).toHaveLength(1);
      expect(receiver.on(path)).toHaveLength(1);
      // enabled again, it receives the next events and the reason is cleared
      const enabled = await admin.patch(`/api/v1/webhooks/${endpoint.id}`, { active: true });
      expect(enabled.status).toBe(200);
      expect(enabled.body.data).toMatchObject({ active: true, disabled_reason: null });
    } finally {
      receiver.answer = () => ({ status: 200 });
    }
  });

  it('audits endpoint changes (created, updated, disabled, deleted) with the request id, never the secret', async () => {
    const entries = async (action: string, id: string) => {
      const res = await admin.get(`/api/v1/audit-events?action=${action}&target_id=${id}`);
      expect(res.status, res.text).toBe(200);
      return res.body.data as Record<string, any>[];
    };
    const path = `/${unique('audited')}`;
    const created = await admin.post('/api/v1/webhooks', {
      url: receiver.url(path),
      events: ['post.created'],
    });
    expect(created.status).toBe(201);
    const { id, secret } = created.body.data as { id: string; secret: string };
    const [c] = await entries('webhook.created', id);
    expect(c).toMatchObject({
      target: { type: 'webhook', id },
      request_id: created.headers.get('x-request-id'),
    });
    expect(c.changes.url).toEqual([null, receiver.url(path)]);
    expect(JSON.stringify(c)).not.toContain(secret);

    const patched = await admin.patch(`/api/v1/webhooks/${id}`, { events: ['post.updated'] });
    expect(patched.status).toBe(200);
    const [u] = await entries('webhook.updated', id);
    expect(u.changes).toEqual({ events: [['post.created'], ['post.updated']] });
    expect(u.request_id).toBe(patched.headers.get('x-request-id'));

    // disabled by the service (410 Gone): the actor is the system
    receiver.answer = (req) => (req.path === path ? { status: 410 } : { status: 200 });
    try {
      await alice.client.post('/api/v1/posts', { title: 'audited', body: 'x' });
      await admin.patch(`/api/v1/webhooks/${id}`, { events: ['post.created'] });
      await alice.client.post('/api/v1/posts', { title: 'audited 2', body: 'x' });
      const [d] = await eventually(async () => {
        const found = await entries('webhook.disabled', id);
        return found.length > 0 ? found : undefined;
      });
      expect(d.actor).toEqual({ type: 'system', id: null });
      expect(d.changes.active).toEqual([true, false]);
    } finally {
      receiver.answer = () => ({ status: 200 });
    }

    const del = await admin.delete(`/api/v1/webhooks/${id}`);
    expect(del.status).toBe(204);
    const deleted = await entries('webhook.deleted', id);
    expect(deleted).toHaveLength(1);
    expect(deleted[0].request_id).toBe(del.headers.get('x-request-id'));
  });

  it('redelivers an event with the same webhook-id (202), and 404 for an unknown delivery', async () => {
    const path = `/${unique('redeliver')}`;
    const endpoint = await register(path, ['post.created']);
    await alice.client.post('/api/v1/posts', { title: 'again', body: 'x' });
    const [first] = await receiver.waitFor((r) => r.some((x) => x.path === path));
    const log = await admin.get(`/api/v1/webhooks/${endpoint.id}/deliveries`);
    const delivery = log.body.data[0];
    const res = await admin.post(
      `/api/v1/webhooks/${endpoint.id}/deliveries/${delivery.id}/redeliver`,
    );
    expect(res.status).toBe(202);
    expect(res.body.data).toMatchObject({
      event_id: delivery.event_id,
      status: 'pending',
      attempts: 0,
    });
    expect(res.body.data.id).not.toBe(delivery.id);
    const got = await receiver.waitFor((r) => r.filter((x) => x.path === path).length >= 2);
    const both = got.filter((x) => x.path === path);
    expect(both[1].headers['webhook-id']).toBe(both[0].headers['webhook-id']);
    expect(both[1].body).toBe(both[0].body);
    expect(first).toBeDefined();
    const unknown = await admin.post(
      `/api/v1/webhooks/${endpoint.id}/deliveries/dlv_01JD5Z6K3M8Q2W4E6R8T0Y2U4A/redeliver`,
    );
    expect(unknown.status).toBe(404);
    const otherEndpoint = await admin.post(
      `/api/v1/webhooks/whk_01JD5Z6K3M8Q2W4E6R8T0Y2U4A/deliveries/${delivery.id}/redeliver`,
    );
    expect(otherEndpoint.status).toBe(404);
    expect(
      (
        await alice.client.post(
          `/api/v1/webhooks/${endpoint.id}/deliveries/${delivery.id}/redeliver`,
        )
      ).status,
    ).toBe(403);
  });

  it('sends a ping whatever the endpoint subscribes to (202), signed like any event', async () => {
    const path = `/${unique('ping')}`;
    const endpoint = await register(path, ['order.created']);
    const res = await admin.post(`/api/v1/webhooks/${endpoint.id}/ping`);
    expect(res.status).toBe(202);
    expect(res.body.data).toMatchObject({ type: 'ping', status: 'pending' });
    const [got] = await receiver.waitFor((r) => r.some((x) => x.path === path));
    const ping = receiver.on(path)[0];
    expect(ping.json.type).toBe('ping');
    expect(ping.json.data.object.id).toBe(endpoint.id);
    expect(ping.json.data.object.secret).toBeUndefined();
    expect(verify(endpoint.secret, ping)).toEqual(ping.json);
    expect(got).toBeDefined();
    expect((await admin.post('/api/v1/webhooks/whk_01JD5Z6K3M8Q2W4E6R8T0Y2U4A/ping')).status).toBe(
      404,
    );
    expect((await alice.client.post(`/api/v1/webhooks/${endpoint.id}/ping`)).status).toBe(403);
  });

  it('rotates the secret (200, shown once): both secrets sign during the overlap', async () => {
    const path = `/${unique('rotate')}`;
    const endpoint = await register(path, ['post.created']);
    const res = await admin.post(`/api/v1/webhooks/${endpoint.id}/secret`);
    expect(res.status).toBe(200);
    expect(res.body.data.secret).toMatch(/^whsec_/);
    expect(res.body.data.secret).not.toBe(endpoint.secret);
    const overlap = Date.parse(res.body.data.previous_secret_expires_at) - Date.now();
    expect(overlap).toBeGreaterThan(23.9 * 3600_000);
    expect(overlap).toBeLessThanOrEqual(24 * 3600_000);
    await alice.client.post('/api/v1/posts', { title: 'rotated', body: 'x' });
    await receiver.waitFor((r) => r.some((x) => x.path === path));
    const got = receiver.on(path)[0];
    expect(String(got.headers['webhook-signature']).split(' ')).toHaveLength(2);
    expect(verify(res.body.data.secret, got)).toEqual(got.json);
    expect(verify(endpoint.secret, got)).toEqual(got.json);
    expect(
      (await admin.post('/api/v1/webhooks/whk_01JD5Z6K3M8Q2W4E6R8T0Y2U4A/secret')).status,
    ).toBe(404);
    expect((await alice.client.post(`/api/v1/webhooks/${endpoint.id}/secret`)).status).toBe(403);
  });

  it('lists endpoints with cursor paging and Link headers; 400 on an unknown parameter', async () => {
    for (let i = 0; i < 3; i++) {
      await register(`/${unique('list')}`, ['post.created']);
    }
    const first = await admin.get('/api/v1/webhooks?limit=2');
    expect(first.status).toBe(200);
    expect(first.body.data).toHaveLength(2);
    expect(first.body.meta.total).toBeGreaterThanOrEqual(3);
    const next = /<([^>]+)>; rel="next"/.exec(first.headers.get('link') ?? '')?.[1];
    expect(next).toContain('cursor=');
    const second = await admin.get(new URL(next!).pathname + new URL(next!).search);
    expect(second.status).toBe(200);
    expect(second.body.data[0].id).not.toBe(first.body.data[0].id);
    expect(first.body.data.every((e: Record<string, unknown>) => e.secret === undefined)).toBe(
      true,
    );
    expect((await admin.get('/api/v1/webhooks?bogus=1')).status).toBe(400);
    expect((await admin.get('/api/v1/webhooks?limit=0')).status).toBe(400);
  });

  it('updates an endpoint (200), refuses a bad url or event (422) and an unknown id (404)', async () => {
    const endpoint = await register(`/${unique('upd')}`, ['post.created']);
    const res = await admin.patch(`/api/v1/webhooks/${endpoint.id}`, {
      events: ['order.created'],
      url: receiver.url('/moved'),
    });
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({ events: ['order.created'], url: receiver.url('/moved') });
    const bad = await admin.patch(`/api/v1/webhooks/${endpoint.id}`, { url: 'https://10.0.0.1/' });
    expect(bad.status).toBe(422);
    const badEvent = await admin.patch(`/api/v1/webhooks/${endpoint.id}`, { events: ['x'] });
    expect(badEvent.status).toBe(422);
    const [row] = await stored(t, 'SELECT url, events FROM webhook_endpoints WHERE id = ?', [
      endpoint.id,
    ]);
    expect(row).toMatchObject({ url: receiver.url('/moved'), events: '["order.created"]' });
    expect(
      (await admin.patch('/api/v1/webhooks/whk_01JD5Z6K3M8Q2W4E6R8T0Y2U4A', { active: true }))
        .status,
    ).toBe(404);
    expect((await admin.patch('/api/v1/webhooks/nope', { active: true })).status).toBe(404);
    expect(
      (await alice.client.patch(`/api/v1/webhooks/${endpoint.id}`, { active: false })).status,
    ).toBe(403);
  });

  it('deletes an endpoint and its log (204), then 404', async () => {
    const endpoint = await register(`/${unique('del')}`, ['post.created']);
    await admin.post(`/api/v1/webhooks/${endpoint.id}/ping`);
    expect((await alice.client.delete(`/api/v1/webhooks/${endpoint.id}`)).status).toBe(403);
    expect((await admin.delete(`/api/v1/webhooks/${endpoint.id}`)).status).toBe(204);
    expect((await admin.get(`/api/v1/webhooks/${endpoint.id}`)).status).toBe(404);
    expect((await admin.get(`/api/v1/webhooks/${endpoint.id}/deliveries`)).status).toBe(404);
    expect((await admin.delete(`/api/v1/webhooks/${endpoint.id}`)).status).toBe(404);
    const rows = await stored(t, 'SELECT id FROM webhook_deliveries WHERE endpoint_id = ?', [
      endpoint.id,
    ]);
    expect(rows).toHaveLength(0);
  });

  it('exports delivery metrics: deliveries by outcome, latency, queue depth', async () => {
    // one endpoint that answers 200 and one that answers 500, for one event
    const ok = `/${unique('metrics-ok')}`;
    const failing = `/${unique('metrics-failing')}`;
    const endpoints = [
      await register(ok, ['post.created']),
      await register(failing, ['post.created']),
    ];
    receiver.answer = (req) => (req.path === failing ? { status: 500 } : { status: 200 });
    try {
      await alice.client.post('/api/v1/posts', { title: 'metrics', body: 'x' });
      const text = await eventually(async () => {
        const res = await request(t.url, '/metrics');
        expect(res.status).toBe(200);
        return receiver.on(ok).length > 0 &&
          receiver.on(failing).length > 0 &&
          /atrium_webhook_deliveries_total\{outcome="succeeded"\} [1-9]/.test(res.text) &&
          /atrium_webhook_deliveries_total\{outcome="failed"\} [1-9]/.test(res.text)
          ? res.text
          : undefined;
      });
      expect(text).toMatch(/atrium_webhook_delivery_seconds_bucket\{le="0.1"\} \d+/);
      expect(text).toMatch(/atrium_webhook_queue_depth \d+/);
    } finally {
      receiver.answer = () => ({ status: 200 });
      for (const endpoint of endpoints) {
        await admin.patch(`/api/v1/webhooks/${endpoint.id}`, { active: false });
      }
    }
  });

  it('GraphQL: webhook queries and mutations for ADMINs, FORBIDDEN for others', async () => {
    const created = await gql(
      t.url,
      `mutation($input: CreateWebhookEndpointInput!) {
        createWebhookEndpoint(input: $input) { secret endpoint { id url events active } } }`,
      {
        auth: { bearer: await adminBearer(t) },
        variables: { input: { url: receiver.url('/gql'), events: ['post.created'] } },
      },
    );
    expect(created.body.errors).toBeUndefined();
    const id = created.body.data.createWebhookEndpoint.endpoint.id as string;
    expect(created.body.data.createWebhookEndpoint.secret).toMatch(/^whsec_/);
    const bearer = await adminBearer(t);
    const updated = await gql(
      t.url,
      `mutation($id: ID!) { updateWebhookEndpoint(id: $id, input: { events: ["order.created"] }) { id events } }`,
      { auth: { bearer }, variables: { id } },
    );
    expect(updated.body.data.updateWebhookEndpoint.events).toEqual(['order.created']);
    await admin.post(`/api/v1/webhooks/${id}/ping`);
    await receiver.waitFor((r) => r.some((x) => x.path === '/gql'));
    const read = await gql(
      t.url,
      `query($id: ID!) { webhookEndpoint(id: $id) { id url }
        webhookEndpoints { id }
        webhookDeliveries(endpointId: $id, first: 5) { totalCount hasNextPage endCursor nodes { id eventId type status attempts lastStatusCode } } }`,
      { auth: { bearer }, variables: { id } },
    );
    expect(read.body.errors).toBeUndefined();
    expect(read.body.data.webhookEndpoint.id).toBe(id);
    expect(read.body.data.webhookEndpoints.some((e: { id: string }) => e.id === id)).toBe(true);
    expect(read.body.data.webhookDeliveries.nodes[0]).toMatchObject({ type: 'ping' });
    const refused = await gql(t.url, '{ webhookEndpoints { id } }', {
      auth: { bearer: alice.token },
    });
    expect(codes(refused.body)).toContain('FORBIDDEN');
    const missing = await gql(
      t.url,
      'query { webhookEndpoint(id: "whk_01JD5Z6K3M8Q2W4E6R8T0Y2U4A") { id } }',
      {
        auth: { bearer },
      },
    );
    expect(codes(missing.body)).toContain('NOT_FOUND');
    const bad = await gql(
      t.url,
      `mutation { createWebhookEndpoint(input: { url: "https://10.0.0.1/", events: ["post.created"] }) { secret } }`,
      { auth: { bearer } },
    );
    expect(codes(bad.body)).toContain('BAD_USER_INPUT');
    const deleted = await gql(t.url, `mutation($id: ID!) { deleteWebhookEndpoint(id: $id) }`, {
      auth: { bearer },
      variables: { id },
    });
    expect(deleted.body.data.deleteWebhookEndpoint).toBe(true);
    expect((await admin.get(`/api/v1/webhooks/${id}`)).status).toBe(404);
  });
});

function adminBearer(t: TestApp): Promise<string> {
  return tokenFor(t.url, ADMIN_EMAIL, ADMIN_PASSWORD);
}
