import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApp, type TestApp } from './helpers/app.js';
import { adminClient, createUser, type CreatedUser } from './helpers/factories.js';
import { client, request, type Client } from './helpers/http.js';
import {
  authorize,
  exchangeCode,
  registerClient,
  tokenRequest,
  type RegisteredClient,
} from './helpers/oauth.js';

describe('Authorized apps (/api/v1/oauth/grants)', () => {
  let t: TestApp;
  let admin: Client;
  let user: CreatedUser;
  let partner: RegisteredClient;

  beforeAll(async () => {
    t = await startApp();
    admin = await adminClient(t.url);
    user = await createUser(t.url);
    partner = await registerClient(admin, { name: 'Grant Test App' });
  });
  afterAll(() => t?.close());

  async function grantTokens(who: CreatedUser, app = partner) {
    const { redirect, verifier } = await authorize(t.url, {
      client: app,
      email: who.email,
      password: who.password,
      scope: 'openid offline_access users:read',
      prompt: 'consent',
    });
    const res = await exchangeCode(t.url, app, redirect.searchParams.get('code')!, verifier);
    expect(res.status).toBe(200);
    return res.body as { access_token: string; refresh_token: string };
  }

  it('lists the apps a user authorized with the granted scopes, and only theirs', async () => {
    const other = await createUser(t.url);
    await grantTokens(user);
    const res = await user.client.get('/api/v1/oauth/grants');
    expect(res.status).toBe(200);
    const app = res.body.data.find((a: { client_id: string }) => a.client_id === partner.client_id);
    expect(app).toMatchObject({ client_name: 'Grant Test App' });
    expect(app.scopes).toEqual(expect.arrayContaining(['openid', 'offline_access', 'users:read']));
    expect(Date.parse(app.granted_at)).toBeGreaterThan(Date.now() - 60_000);
    const theirs = await other.client.get('/api/v1/oauth/grants');
    expect(theirs.status).toBe(200);
    expect(theirs.body.data).toEqual([]);
    expect((await request(t.url, '/api/v1/oauth/grants')).status).toBe(401);
  });

  it('revokes an app: its refresh tokens and access tokens stop working at once', async () => {
    const tokens = await grantTokens(user);
    const asApp = client(t.url, { bearer: tokens.access_token });
    expect((await asApp.get(`/api/v1/users/${user.id}`)).status).toBe(200);

    const del = await user.client.delete(`/api/v1/oauth/grants/${partner.client_id}`);
    expect(del.status).toBe(204);
    const list = await user.client.get('/api/v1/oauth/grants');
    expect(list.body.data.map((a: { client_id: string }) => a.client_id)).not.toContain(
      partner.client_id,
    );
    const refresh = await tokenRequest(t.url, partner, {
      grant_type: 'refresh_token',
      refresh_token: tokens.refresh_token,
    });
    expect(refresh.status).toBe(400);
    expect(refresh.body.error).toBe('invalid_grant');
    const after = await asApp.get(`/api/v1/users/${user.id}`);
    expect(after.status).toBe(401);
    // idempotent
    expect((await user.client.delete(`/api/v1/oauth/grants/${partner.client_id}`)).status).toBe(
      204,
    );
  });
});
