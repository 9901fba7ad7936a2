import { DataSource } from 'typeorm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApp, type TestApp } from './helpers/app.js';
import { adminClient, unique } from './helpers/factories.js';
import type { Client } from './helpers/http.js';
import { eventually, WebhookReceiver } from './helpers/webhook-receiver.js';

async function stored(t: TestApp, sql: string, params: unknown[] = []) {
  const ds = t.app.get(DataSource);
  const pg = ds.options.type === 'postgres';
  let n = 0;
  return ds.query<Record<string, unknown>[]>(
    pg ? sql.replace(/\?/g, () => `$${++n}`) : sql,
    params,
  );
}

/** Webhook targets in IPv6 ranges that embed or translate IPv4 (docs/webhooks.md "Security"). */
describe('webhooks: IPv6 transition and discard ranges are refused like private addresses', () => {
  let t: TestApp;
  let admin: Client;
  let receiver: WebhookReceiver;

  beforeAll(async () => {
    receiver = await new WebhookReceiver().start();
    t = await startApp({
      WEBHOOK_ALLOWED_HOSTS: '127.0.0.1',
      WEBHOOK_RETRY_SCHEDULE_S: '0.2',
      WEBHOOK_TIMEOUT_MS: '1000',
    });
    admin = await adminClient(t.url);
  });

  afterAll(async () => {
    await t?.close();
    await receiver?.close();
  });

  async function register(): Promise<{ id: string; secret: string }> {
    const res = await admin.post('/api/v1/webhooks', {
      url: receiver.url(`/${unique('hook')}`),
      events: ['post.created'],
    });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    return res.body.data as { id: string; secret: string };
  }

  it.each([
    ['an IPv4-compatible address (::/96) of a private address', 'https://[::a00:1]/hook'],
    ['an IPv4-compatible address (::/96) of a public address', 'https://[::808:808]/hook'],
    ['a 6to4 address (2002::/16) of a private address', 'https://[2002:a00:1::1]/hook'],
    ['a 6to4 address (2002::/16) of loopback', 'https://[2002:7f00:1::1]/hook'],
    ['a NAT64 local-use address (64:ff9b:1::/48)', 'https://[64:ff9b:1::a00:1]/hook'],
    ['a discard-only address (100::/64)', 'https://[100::1]/hook'],
  ])('refuses %s at registration (422 on url) and stores nothing', async (_what, url) => {
    const res = await admin.post('/api/v1/webhooks', { url, events: ['post.created'] });
    expect(res.status, JSON.stringify(res.body)).toBe(422);
    expect(res.body.error.details[0].field).toBe('url');
    expect(await stored(t, 'SELECT id FROM webhook_endpoints WHERE url = ?', [url])).toHaveLength(
      0,
    );
  });

  it('refuses a 6to4 target at delivery (an endpoint stored before the rule): refused, never sent', async () => {
    const endpoint = await register();
    // a path of its own: the registration cases look their URLs up in the table
    await stored(t, 'UPDATE webhook_endpoints SET url = ? WHERE id = ?', [
      `https://[2002:7f00:1::1]/${unique('stored')}`,
      endpoint.id,
    ]);
    const ping = await admin.post(`/api/v1/webhooks/${endpoint.id}/ping`);
    expect(ping.status).toBe(202);
    const delivery = await eventually(async () => {
      const log = await admin.get(`/api/v1/webhooks/${endpoint.id}/deliveries`);
      const d = log.body.data[0] as { attempts: number; last_error: string | null } | undefined;
      return d && d.attempts >= 1 ? d : undefined;
    });
    expect(delivery.last_error).toMatch(/^refused: the URL .*2002:7f00:1::1/);
  });
});
