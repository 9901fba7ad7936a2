import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApp, type TestApp } from './helpers/app.js';
import { adminClient, createApiKey, unique } from './helpers/factories.js';
import { client, type Client } from './helpers/http.js';
import { eventually, WebhookReceiver } from './helpers/webhook-receiver.js';
import { registerClient } from './helpers/oauth.js';

/**
 * If-Match on the writes of webhooks, OAuth clients and API keys, like users and posts: a stale tag
 * is 412 `precondition_failed` and changes nothing (docs/decisions.md, "ETags").
 */
describe('If-Match on webhook endpoints, OAuth clients and API keys', () => {
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

  async function etagOf(path: string): Promise<string> {
    const res = await admin.get(path);
    expect(res.status).toBe(200);
    const etag = res.headers.get('etag');
    expect(etag).toMatch(/^"/);
    return etag!;
  }

  it('PATCH and DELETE /webhooks/{id}: a stale If-Match is 412 and changes nothing; the current one works', async () => {
    const created = await admin.post('/api/v1/webhooks', {
      url: receiver.url(`/${unique('etag')}`),
      events: ['post.created'],
      description: 'first',
    });
    expect(created.status).toBe(201);
    const path = `/api/v1/webhooks/${created.body.data.id as string}`;
    const stale = await etagOf(path);
    expect((await admin.patch(path, { description: 'second' })).status).toBe(200);

    const patch = await admin.patch(
      path,
      { description: 'lost update' },
      { headers: { 'if-match': stale } },
    );
    expect(patch.status).toBe(412);
    expect(patch.body.error.code).toBe('precondition_failed');
    const del = await admin.delete(path, { headers: { 'if-match': stale } });
    expect(del.status).toBe(412);
    expect((await admin.get(path)).body.data.description).toBe('second');

    const current = await etagOf(path);
    const ok = await admin.patch(
      path,
      { description: 'third' },
      { headers: { 'if-match': current } },
    );
    expect(ok.status).toBe(200);
    // the answer carries the ETag the next GET sends: usable as If-Match at once
    expect(ok.headers.get('etag')).toBe(await etagOf(path));
    expect(
      (await admin.delete(path, { headers: { 'if-match': ok.headers.get('etag')! } })).status,
    ).toBe(204);
    expect((await admin.get(path)).status).toBe(404);
  });

  it('PATCH and DELETE /oauth/clients/{id}: a stale If-Match is 412 and changes nothing; the current one works', async () => {
    const app = await registerClient(admin, { name: 'Tagged app' });
    const path = `/api/v1/oauth/clients/${app.client_id}`;
    const stale = await etagOf(path);
    expect((await admin.patch(path, { name: 'Renamed app' })).status).toBe(200);

    const patch = await admin.patch(path, { name: 'Lost' }, { headers: { 'if-match': stale } });
    expect(patch.status).toBe(412);
    expect(patch.body.error.code).toBe('precondition_failed');
    const del = await admin.delete(path, { headers: { 'if-match': stale } });
    expect(del.status).toBe(412);
    const kept = await admin.get(path);
    expect(kept.status).toBe(200);
    expect(kept.body.data.name).toBe('Renamed app');

    const current = await etagOf(path);
    const ok = await admin.patch(path, { name: 'Third' }, { headers: { 'if-match': current } });
    expect(ok.status).toBe(200);
    expect(ok.headers.get('etag')).toBe(await etagOf(path));
    expect(
      (await admin.delete(path, { headers: { 'if-match': ok.headers.get('etag')! } })).status,
    ).toBe(204);
    expect((await admin.get(path)).status).toBe(404);
  });

  it('DELETE /api-keys/{id}: a stale If-Match (the key was used since) is 412 and the key keeps working', async () => {
    const key = await createApiKey(admin);
    const path = `/api/v1/api-keys/${key.id}`;
    const stale = await etagOf(path);
    // using the key records last_used_at: the representation, and so its ETag, changes
    const asKey = client(t.url, { apiKey: key.key });
    expect((await asKey.get('/api/v1/auth/me')).status).toBe(200);
    await eventually(async () => (await admin.get(path)).body.data.last_used_at !== null);

    const del = await admin.delete(path, { headers: { 'if-match': stale } });
    expect(del.status).toBe(412);
    expect(del.body.error.code).toBe('precondition_failed');
    expect((await admin.get(path)).body.data.revoked_at).toBeNull();
    expect((await asKey.get('/api/v1/auth/me')).status).toBe(200);

    const current = await etagOf(path);
    expect((await admin.delete(path, { headers: { 'if-match': current } })).status).toBe(204);
    expect((await asKey.get('/api/v1/auth/me')).status).toBe(401);
  });

  it('the OpenAPI document lists the If-Match header and the 412 on these operations', async () => {
    const doc = (await (await fetch(`${t.url}/api/docs-json`)).json()) as {
      paths: Record<
        string,
        Record<string, { parameters?: { name: string; in: string }[]; responses: object }>
      >;
    };
    for (const [path, method] of [
      ['/api/v1/webhooks/{id}', 'patch'],
      ['/api/v1/webhooks/{id}', 'delete'],
      ['/api/v1/oauth/clients/{client_id}', 'patch'],
      ['/api/v1/oauth/clients/{client_id}', 'delete'],
      ['/api/v1/api-keys/{id}', 'delete'],
    ] as const) {
      const op = doc.paths[path]?.[method];
      expect(op, `${method} ${path}`).toBeDefined();
      expect(
        op.parameters?.some((p) => p.in === 'header' && p.name.toLowerCase() === 'if-match'),
        `${method} ${path} If-Match`,
      ).toBe(true);
      expect(Object.keys(op.responses), `${method} ${path} 412`).toContain('412');
    }
  });
});
