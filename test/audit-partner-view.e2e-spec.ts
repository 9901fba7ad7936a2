import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApp, type TestApp } from './helpers/app.js';
import {
  adminClient,
  createApiKey,
  createUser,
  unique,
  type CreatedUser,
} from './helpers/factories.js';
import { client, type Client } from './helpers/http.js';
import { authorize, exchangeCode, registerClient, type RegisteredClient } from './helpers/oauth.js';
import { WebhookReceiver } from './helpers/webhook-receiver.js';
import { gql } from './graphql-client.js';

interface Entry {
  action: string;
  target: { type: string; id: string };
  changes: Record<string, [unknown, unknown]>;
  ip: string | null;
}

const FIRST_PARTY_ONLY = /^(webhook|api_key|oauth_client|oauth_grant)\./;

/**
 * The audit log and the user search read with a partner app's token show what its scopes show
 * elsewhere (docs/admin.md "Audit log", "User search"; docs/oauth.md "Rules").
 */
describe('audit log and user search for OAuth tokens', () => {
  let t: TestApp;
  let admin: Client;
  let receiver: WebhookReceiver;
  let adminUser: CreatedUser;
  let partner: RegisteredClient;
  let target: CreatedUser;
  let webhookUrl: string;
  let webhookId: string;
  let noEmail: Client;
  let withEmail: Client;
  let noEmailToken: string;

  async function tokenFor(scope: string): Promise<string> {
    const { redirect, verifier } = await authorize(t.url, {
      client: partner,
      email: adminUser.email,
      password: adminUser.password,
      scope,
      prompt: 'consent',
    });
    const res = await exchangeCode(t.url, partner, redirect.searchParams.get('code')!, verifier);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    return res.body.access_token as string;
  }

  beforeAll(async () => {
    receiver = await new WebhookReceiver().start();
    t = await startApp({ WEBHOOK_ALLOWED_HOSTS: '127.0.0.1' });
    admin = await adminClient(t.url);
    adminUser = await createUser(t.url, { role: 'ADMIN' });
    partner = await registerClient(admin, {
      redirect_uris: ['https://partner.example/callback', 'https://other-app.example/secret-cb'],
      scopes: ['openid', 'email', 'admin', 'users:read'],
    });
    // entries the token must not read: webhooks (their URL), API keys, another app's redirect URIs
    webhookUrl = receiver.url(`/${unique('private-path')}`);
    const hook = await admin.post('/api/v1/webhooks', {
      url: webhookUrl,
      events: ['post.created'],
    });
    expect(hook.status).toBe(201);
    webhookId = hook.body.data.id as string;
    await createApiKey(admin);
    // an entry it may read, whose changes hold an email
    target = await createUser(t.url, { name: `Target ${unique()}` });
    noEmailToken = await tokenFor('openid admin users:read');
    noEmail = client(t.url, { bearer: noEmailToken });
    withEmail = client(t.url, { bearer: await tokenFor('openid email admin users:read') });
  });

  afterAll(async () => {
    await t?.close();
    await receiver?.close();
  });

  it('REST /audit-events without the email scope: no webhook, API key or OAuth client entries, no ip, no emails; meta.total counts what it shows', async () => {
    const res = await noEmail.get('/api/v1/audit-events?limit=100');
    expect(res.status).toBe(200);
    const entries = res.body.data as Entry[];
    expect(entries.length).toBeGreaterThan(0);
    expect(entries.filter((e) => FIRST_PARTY_ONLY.test(e.action))).toEqual([]);
    expect(entries.every((e) => e.ip === null)).toBe(true);
    const created = entries.find((e) => e.action === 'user.created' && e.target.id === target.id);
    expect(created?.changes.name).toEqual([null, target.body.name]);
    expect(created?.changes).not.toHaveProperty('email');
    expect(res.text).not.toContain(target.email);
    expect(res.text).not.toContain(adminUser.email);
    expect(res.text).not.toContain(webhookUrl);
    expect(res.text).not.toContain('other-app.example');
    expect(res.body.meta.total).toBe(entries.length);

    // the first-party ADMIN reads all of it (the same log)
    const full = await admin.get('/api/v1/audit-events?limit=100');
    const all = full.body.data as Entry[];
    expect(all.some((e) => e.action === 'webhook.created' && e.target.id === webhookId)).toBe(true);
    expect(all.some((e) => e.action === 'api_key.created')).toBe(true);
    expect(all.some((e) => e.action === 'oauth_client.created')).toBe(true);
    expect(all.some((e) => e.ip !== null)).toBe(true);
    expect(full.text).toContain(target.email);
  });

  it('REST /audit-events filters cannot reach hidden entries: action, target_id, since (meta.total too)', async () => {
    const byAction = await noEmail.get('/api/v1/audit-events?action=webhook.created');
    expect(byAction.status).toBe(200);
    expect(byAction.body.data).toEqual([]);
    expect(byAction.body.meta.total).toBe(0);
    const byTarget = await noEmail.get(`/api/v1/audit-events?target_id=${webhookId}`);
    expect(byTarget.body.data).toEqual([]);
    expect(byTarget.body.meta.total).toBe(0);
    const since = await noEmail.get('/api/v1/audit-events?since=2000-01-01T00:00:00Z&limit=100');
    expect(since.status).toBe(200);
    expect((since.body.data as Entry[]).filter((e) => FIRST_PARTY_ONLY.test(e.action))).toEqual([]);
    expect(since.body.meta.total).toBe(since.body.data.length);
    // a readable action keeps its exact counter
    const users = await noEmail.get('/api/v1/audit-events?action=user.created&limit=100');
    expect(users.body.meta.total).toBe(users.body.data.length);
    expect(users.body.meta.total).toBeGreaterThan(0);
  });

  it('REST /audit-events with the email scope shows emails in changes, still no ip and no first-party entries', async () => {
    const res = await withEmail.get('/api/v1/audit-events?limit=100');
    expect(res.status).toBe(200);
    const entries = res.body.data as Entry[];
    const created = entries.find((e) => e.action === 'user.created' && e.target.id === target.id);
    expect(created?.changes.email).toEqual([null, target.email]);
    expect(entries.every((e) => e.ip === null)).toBe(true);
    expect(entries.filter((e) => FIRST_PARTY_ONLY.test(e.action))).toEqual([]);
  });

  it('GraphQL auditEvents without the email scope: the same view (no hidden actions, no ip, no email changes, totalCount of what it shows)', async () => {
    const res = await gql(
      t.url,
      `{ auditEvents(first: 20) { totalCount nodes { action ip target { id } changes { field new } } } }`,
      { auth: { bearer: noEmailToken } },
    );
    expect(res.body.errors).toBeUndefined();
    const page = res.body.data!.auditEvents as {
      totalCount: number;
      nodes: {
        action: string;
        ip: string | null;
        target: { id: string };
        changes: { field: string; new: string }[];
      }[];
    };
    expect(page.nodes.filter((n) => FIRST_PARTY_ONLY.test(n.action))).toEqual([]);
    expect(page.nodes.every((n) => n.ip === null)).toBe(true);
    const created = page.nodes.find(
      (n) => n.action === 'user.created' && n.target.id === target.id,
    );
    expect(created?.changes.map((c) => c.field)).not.toContain('email');
    expect(JSON.stringify(page)).not.toContain(target.email);
    expect(page.totalCount).toBe(page.nodes.length);
  });

  it('user search q= matches emails only for a token with the email scope (REST and GraphQL), so meta.total reveals none', async () => {
    const prefix = target.email.slice(0, 8);
    const path = `/api/v1/users?q=${encodeURIComponent(prefix)}`;
    const blind = await noEmail.get(path);
    expect(blind.status).toBe(200);
    expect(blind.body.meta.total).toBe(0);
    expect(blind.body.data).toEqual([]);
    const allowed = await withEmail.get(path);
    expect(allowed.body.meta.total).toBe(1);
    expect(allowed.body.data[0].id).toBe(target.id);
    // a first-party ADMIN matches emails as before
    expect((await admin.get(path)).body.meta.total).toBe(1);

    const query = `query($q: String!) { users(query: $q) { totalCount } }`;
    const gqlBlind = await gql(t.url, query, {
      auth: { bearer: noEmailToken },
      variables: { q: prefix },
    });
    expect(gqlBlind.body.errors).toBeUndefined();
    expect((gqlBlind.body.data!.users as { totalCount: number }).totalCount).toBe(0);
  });
});
