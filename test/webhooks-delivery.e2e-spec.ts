import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  freshDatabaseUrl,
  startApp,
  startPair,
  usingPostgres,
  usingRedis,
  type TestApp,
} from './helpers/app.js';
import { adminClient, createUser, unique, type CreatedUser } from './helpers/factories.js';
import { client, type Client } from './helpers/http.js';
import { authorize, exchangeCode, registerClient } from './helpers/oauth.js';
import { eventually, settledDeliveries, WebhookReceiver } from './helpers/webhook-receiver.js';

const ALLOW_LOOPBACK = { WEBHOOK_ALLOWED_HOSTS: '127.0.0.1' };

async function register(admin: Client, url: string, events: string[], extra = {}) {
  const res = await admin.post('/api/v1/webhooks', { url, events, ...extra });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body.data as { id: string; secret: string };
}

describe('webhooks: partner endpoints see only what their grants allow', () => {
  let t: TestApp;
  let admin: Client;
  let receiver: WebhookReceiver;
  let granted: CreatedUser;
  let stranger: CreatedUser;
  let partner: Awaited<ReturnType<typeof registerClient>>;

  beforeAll(async () => {
    receiver = await new WebhookReceiver().start();
    t = await startApp(ALLOW_LOOPBACK);
    admin = await adminClient(t.url);
    granted = await createUser(t.url);
    stranger = await createUser(t.url);
    partner = await registerClient(admin, {
      name: 'Webhook partner',
      scopes: ['openid', 'email', 'users:read', 'posts:read', 'orders:read'],
    });
    const { redirect, verifier } = await authorize(t.url, {
      client: partner,
      email: granted.email,
      password: granted.password,
      // no orders:read and no email: order events and email stay out
      scope: 'openid users:read posts:read',
      prompt: 'consent',
    });
    const res = await exchangeCode(t.url, partner, redirect.searchParams.get('code')!, verifier);
    expect(res.status).toBe(200);
  });

  afterAll(async () => {
    await t?.close();
    await receiver?.close();
  });

  it('delivers events about users who granted the client, only of types its scopes read, email hidden', async () => {
    const path = `/${unique('partner')}`;
    const endpoint = await register(
      admin,
      receiver.url(path),
      ['post.created', 'user.updated', 'order.created'],
      { oauth_client_id: partner.client_id },
    );
    const service = `/${unique('service')}`;
    await register(admin, receiver.url(service), ['user.updated']);

    const mine = await granted.client.post('/api/v1/posts', { title: 'granted', body: 'x' });
    expect(mine.status).toBe(201);
    const theirs = await stranger.client.post('/api/v1/posts', { title: 'stranger', body: 'x' });
    expect(theirs.status).toBe(201);
    const renamed = await granted.client.patch(`/api/v1/users/${granted.id}`, { name: 'Renamed' });
    expect(renamed.status).toBe(200);
    const order = await granted.client.post(`/api/v1/users/${granted.id}/orders`, {
      currency: 'EUR',
      items: [{ sku: 'A', quantity: 1, unit_price_cents: 100 }],
    });
    expect(order.status).toBe(201);

    // the sentinel: a change of the stranger, committed after the others, which only the
    // service-wide endpoint receives; once it has arrived the partner endpoint's rows of every
    // earlier event are written (settledDeliveries)
    const sentinel = async (name: string) => {
      const res = await stranger.client.patch(`/api/v1/users/${stranger.id}`, { name });
      expect(res.status).toBe(200);
      await receiver.waitFor((r) =>
        r.some((x) => x.path === service && x.json?.data?.object?.name === name),
      );
      return settledDeliveries(admin, endpoint.id);
    };
    expect(await sentinel(`Stranger ${unique()}`)).toHaveLength(2);
    const got = receiver.on(path);
    expect(got.map((g) => g.json.type).sort()).toEqual(['post.created', 'user.updated']);
    const post = got.find((g) => g.json.type === 'post.created')!;
    expect(post.json.data.object.id).toBe(mine.body.data.id);
    const user = got.find((g) => g.json.type === 'user.updated')!;
    expect(user.json.data.object).toMatchObject({ id: granted.id, name: 'Renamed', email: null });
    // a service-wide endpoint gets the ADMIN's representation, email included
    const aboutGranted = receiver.on(service).find((g) => g.json.data.object.id === granted.id)!;
    expect(aboutGranted.json.data.object.email).toBe(granted.email);

    // revoking the grant stops them
    expect((await granted.client.delete(`/api/v1/oauth/grants/${partner.client_id}`)).status).toBe(
      204,
    );
    await granted.client.post('/api/v1/posts', { title: 'after revocation', body: 'x' });
    expect(await sentinel(`Stranger ${unique()}`)).toHaveLength(2);
    expect(receiver.on(path)).toHaveLength(2);
    const log = await admin.get(`/api/v1/webhooks/${endpoint.id}/deliveries`);
    expect(log.body.data).toHaveLength(2);
  });
});

describe('webhooks: failures and slow receivers', () => {
  let t: TestApp;
  let admin: Client;
  let receiver: WebhookReceiver;

  beforeAll(async () => {
    receiver = await new WebhookReceiver().start();
    t = await startApp({
      ...ALLOW_LOOPBACK,
      WEBHOOK_RETRY_SCHEDULE_S: '0.2,0.2',
      WEBHOOK_DISABLE_AFTER_S: '0',
      WEBHOOK_TIMEOUT_MS: '1000',
    });
    admin = await adminClient(t.url);
  });

  afterAll(async () => {
    await t?.close();
    await receiver?.close();
  });

  it('disables an endpoint whose deliveries keep failing, with disabled_reason', async () => {
    const path = `/${unique('down')}`;
    const endpoint = await register(admin, receiver.url(path), ['post.created']);
    receiver.answer = (req) => (req.path === path ? { status: 500 } : { status: 200 });
    try {
      await admin.post('/api/v1/posts', { title: 'down', body: 'x' });
      const disabled = await eventually(async () => {
        const res = await admin.get(`/api/v1/webhooks/${endpoint.id}`);
        return res.body.data.active === false ? res.body.data : undefined;
      });
      expect(disabled.disabled_reason).toMatch(/every delivery failed/);
      const log = await admin.get(`/api/v1/webhooks/${endpoint.id}/deliveries`);
      expect(log.body.data[0].status).toBe('failed');
    } finally {
      receiver.answer = () => ({ status: 200 });
    }
  });

  it('a receiver that never answers times out without holding the API’s requests', async () => {
    const path = `/${unique('slow')}`;
    const endpoint = await register(admin, receiver.url(path), ['post.created']);
    receiver.answer = (req) => (req.path === path ? 'hang' : { status: 200 });
    try {
      const started = Date.now();
      for (let i = 0; i < 5; i++) {
        const res = await admin.post('/api/v1/posts', { title: `slow ${i}`, body: 'x' });
        expect(res.status).toBe(201);
      }
      await receiver.waitFor((r) => r.filter((x) => x.path === path).length >= 5);
      // the receiver holds every delivery open; the API keeps answering at once
      const during = Date.now();
      expect((await admin.get('/api/v1/posts?limit=1')).status).toBe(200);
      expect(Date.now() - during).toBeLessThan(500);
      expect(during - started).toBeLessThan(5_000);
      const timedOut = await eventually(async () => {
        const log = await admin.get(`/api/v1/webhooks/${endpoint.id}/deliveries`);
        return log.body.data.find((d: { last_error: string | null }) =>
          d.last_error?.includes('no answer within 1000 ms'),
        );
      });
      expect(timedOut.last_status_code).toBeNull();
      expect(timedOut.last_duration_ms).toBeGreaterThanOrEqual(900);
    } finally {
      receiver.answer = () => ({ status: 200 });
      await admin.patch(`/api/v1/webhooks/${endpoint.id}`, { active: false });
    }
  });

  it('reads at most 64 KB of a response body (a 2 MB answer still counts by its status)', async () => {
    const path = `/${unique('big')}`;
    const endpoint = await register(admin, receiver.url(path), ['post.created']);
    receiver.answer = (req) =>
      req.path === path
        ? { status: 200, body: Buffer.alloc(2 * 1024 * 1024, 97) }
        : { status: 200 };
    try {
      await admin.post('/api/v1/posts', { title: 'big', body: 'x' });
      const d = await eventually(async () => {
        const log = await admin.get(`/api/v1/webhooks/${endpoint.id}/deliveries`);
        return log.body.data[0]?.status === 'succeeded' ? log.body.data[0] : undefined;
      });
      expect(d).toMatchObject({ attempts: 1, last_status_code: 200 });
    } finally {
      receiver.answer = () => ({ status: 200 });
    }
  });
});

describe('webhooks: a slow receiver holds no more than its share of the slots', () => {
  it('keeps delivering to a healthy endpoint while another hangs (WEBHOOK_ENDPOINT_CONCURRENCY)', async () => {
    const receiver = await new WebhookReceiver().start();
    const t = await startApp({
      ...ALLOW_LOOPBACK,
      WEBHOOK_CONCURRENCY: '4',
      WEBHOOK_ENDPOINT_CONCURRENCY: '2',
      WEBHOOK_TIMEOUT_MS: '8000',
    });
    try {
      const admin = await adminClient(t.url);
      const slow = `/${unique('hangs')}`;
      const healthy = `/${unique('healthy')}`;
      receiver.answer = (req) => (req.path === slow ? 'hang' : { status: 204 });
      await register(admin, receiver.url(slow), ['post.created']);
      await register(admin, receiver.url(healthy), ['post.created']);
      const started = Date.now();
      for (let i = 0; i < 8; i++) {
        expect((await admin.post('/api/v1/posts', { title: `share ${i}`, body: 'x' })).status).toBe(
          201,
        );
      }
      // every event reaches the healthy endpoint long before the hanging attempts time out
      await receiver.waitFor((r) => r.filter((x) => x.path === healthy).length >= 8);
      expect(Date.now() - started).toBeLessThan(6_000);
      // and the hanging endpoint never had more than its 2 attempts open: both are open, and a
      // sentinel event committed after the 8 reaches the healthy endpoint. Attempts are claimed in
      // next_attempt_at order, so a third attempt at the hanging endpoint (its rows are older than
      // the sentinel's), had the cap let it through, would have been claimed no later than the
      // sentinel's and sent with it
      await receiver.waitFor((r) => r.filter((x) => x.path === slow).length >= 2);
      const sentinel = await admin.post('/api/v1/posts', { title: 'sentinel', body: 'x' });
      expect(sentinel.status).toBe(201);
      await receiver.waitFor((r) =>
        r.some((x) => x.path === healthy && x.json?.data?.object?.id === sentinel.body.data.id),
      );
      expect(receiver.on(slow)).toHaveLength(2);
    } finally {
      await receiver.close();
      await t.close();
    }
  });
});

describe('webhooks: durability across a restart', () => {
  it('delivers after a restart the events committed while no instance delivered: nothing lost', async () => {
    const receiver = await new WebhookReceiver().start();
    const dir = usingPostgres ? undefined : mkdtempSync(join(tmpdir(), 'atrium-webhooks-'));
    const env = {
      ...ALLOW_LOOPBACK,
      DATABASE_URL: dir ? `sqlite:${join(dir, 'db.sqlite')}` : freshDatabaseUrl(),
    };
    try {
      // an instance that records events but delivers none (as one stopped before delivering would)
      const first = await startApp({ ...env, WEBHOOK_DELIVERY_ENABLED: 'false' });
      const admin = await adminClient(first.url);
      const path = `/${unique('restart')}`;
      const endpoint = await register(admin, receiver.url(path), ['post.created', 'user.created']);
      const ids: string[] = [];
      for (let i = 0; i < 10; i++) {
        const res = await admin.post('/api/v1/posts', { title: `p${i}`, body: 'x' });
        ids.push(res.body.data.id as string);
      }
      const user = await createUser(first.url);
      ids.push(user.id);
      // closed, the first instance sends nothing more: whatever it sent has arrived by now
      await first.close();
      expect(receiver.on(path)).toHaveLength(0);

      const second = await startApp(env);
      try {
        await receiver.waitFor((r) => r.filter((x) => x.path === path).length >= 11);
        // each attempt is claimed on its delivery row before it is sent: a settled log of 11 rows
        // of one attempt each means 11 requests, no second one on its way
        const log = await settledDeliveries(await adminClient(second.url), endpoint.id);
        expect(log.map((d) => [d.status, d.attempts])).toEqual(Array(11).fill(['succeeded', 1]));
        const got = receiver.on(path);
        expect(got).toHaveLength(11);
        expect(got.map((g) => g.json.data.object.id as string).sort()).toEqual([...ids].sort());
        expect(new Set(got.map((g) => g.headers['webhook-id'])).size).toBe(11);
      } finally {
        await second.close();
      }
    } finally {
      await receiver.close();
      if (dir) {
        rmSync(dir, { recursive: true, force: true });
      }
    }
  });
});

describe('webhooks: two instances deliver each event exactly once', () => {
  it(`delivers every event once per endpoint with both instances working (${
    usingPostgres && usingRedis ? 'PostgreSQL + Redis, BullMQ' : 'shared database, leased rows'
  })`, async () => {
    const receiver = await new WebhookReceiver().start();
    const pair = await startPair(ALLOW_LOOPBACK);
    try {
      const adminA = await adminClient(pair.a.url);
      const adminB = client(pair.b.url, { bearer: await tokenOf(pair.b.url) });
      const one = `/${unique('pairA')}`;
      const two = `/${unique('pairB')}`;
      const endpoints = [
        await register(adminA, receiver.url(one), ['post.created']),
        await register(adminA, receiver.url(two), ['post.created']),
      ];
      const writes: Promise<unknown>[] = [];
      for (let i = 0; i < 40; i++) {
        const c = i % 2 === 0 ? adminA : adminB;
        writes.push(c.post('/api/v1/posts', { title: `pair ${i}`, body: 'x' }));
      }
      await Promise.all(writes);
      await receiver.waitFor(
        (r) => r.filter((x) => x.path === one || x.path === two).length >= 80,
        20_000,
      );
      // each attempt is claimed on its delivery row before either instance sends it: 40 settled
      // rows of one attempt each per endpoint mean no duplicate is on its way
      for (const endpoint of endpoints) {
        const log = await settledDeliveries(adminA, endpoint.id);
        expect(log.map((d) => [d.status, d.attempts])).toEqual(Array(40).fill(['succeeded', 1]));
      }
      for (const path of [one, two]) {
        const got = receiver.on(path);
        expect(got).toHaveLength(40);
        expect(new Set(got.map((g) => g.headers['webhook-id'])).size).toBe(40);
      }
    } finally {
      await pair.close();
      await receiver.close();
    }
  });
});

async function tokenOf(base: string): Promise<string> {
  const { tokenFor } = await import('./helpers/factories.js');
  const { ADMIN_EMAIL, ADMIN_PASSWORD } = await import('./helpers/app.js');
  return tokenFor(base, ADMIN_EMAIL, ADMIN_PASSWORD);
}
