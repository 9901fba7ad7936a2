import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApp, type TestApp } from './helpers/app.js';
import { adminClient, unique } from './helpers/factories.js';
import type { Client } from './helpers/http.js';
import { WebhookReceiver } from './helpers/webhook-receiver.js';

/** Rotating a webhook secret is audited in its transaction (docs/admin.md "Audit log"). */
describe('webhook secret rotation in the audit log', () => {
  let t: TestApp;
  let admin: Client;
  let receiver: WebhookReceiver;

  beforeAll(async () => {
    receiver = await new WebhookReceiver().start();
    t = await startApp({ WEBHOOK_ALLOWED_HOSTS: '127.0.0.1' });
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

  it('audits a secret rotation (webhook.secret_rotated, with the request id, never a secret)', async () => {
    const endpoint = await register();
    const rotated = await admin.post(`/api/v1/webhooks/${endpoint.id}/secret`);
    expect(rotated.status).toBe(200);
    const entries = await admin.get(`/api/v1/audit-events?target_id=${endpoint.id}`);
    expect(entries.status).toBe(200);
    const entry = (
      entries.body.data as { action: string; request_id: string; changes: object }[]
    ).find((e) => e.action === 'webhook.secret_rotated');
    expect(entry).toMatchObject({
      actor: { type: 'user' },
      target: { type: 'webhook', id: endpoint.id },
      request_id: rotated.headers.get('x-request-id'),
      changes: { overlap_ends_at: [null, rotated.body.data.previous_secret_expires_at] },
    });
    const text = JSON.stringify(entries.body);
    expect(text).not.toContain(endpoint.secret);
    expect(text).not.toContain(rotated.body.data.secret);

    // an unknown endpoint: 404, and nothing is audited
    const before = (await admin.get('/api/v1/audit-events?action=webhook.secret_rotated')).body.meta
      .total as number;
    const missing = await admin.post('/api/v1/webhooks/whk_01JD5Z6K3M8Q2W4E6R8T0Y2U4I/secret');
    expect(missing.status).toBe(404);
    const after = (await admin.get('/api/v1/audit-events?action=webhook.secret_rotated')).body.meta
      .total as number;
    expect(after).toBe(before);
  });
});
