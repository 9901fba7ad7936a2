import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPair, type TestApp } from './helpers/app.js';
import { pastInstant } from './helpers/wait.js';
import { adminClient, createUser, type CreatedUser } from './helpers/factories.js';
import { client, request, type Client } from './helpers/http.js';
import {
  authorize,
  Browser,
  browserAuthorizeUrl,
  exchangeCode,
  followToPageOrApp,
  registerClient,
  tokenRequest,
} from './helpers/oauth.js';

/** A client authentication check: revoking a made-up token answers 200 once the secret is right. */
async function secretWorks(base: string, clientId: string, secret: string): Promise<boolean> {
  const res = await fetch(`${base}/oauth/token/revocation`, {
    method: 'POST',
    headers: {
      authorization: `Basic ${Buffer.from(`${clientId}:${secret}`).toString('base64')}`,
      'content-type': 'application/x-www-form-urlencoded',
    },
    body: 'token=not-a-token-we-issued',
  });
  expect([200, 401]).toContain(res.status);
  return res.status === 200;
}

/**
 * Editable partner apps on two instances over one database: PATCH (name, redirect URIs, scopes,
 * branding), secret rotation with an overlap, and narrowing scopes ending the tokens that carry a
 * dropped one. Edits made on one instance hold on the other at once.
 */
describe('editing a partner app', () => {
  let pair: { a: TestApp; b: TestApp; close(): Promise<void> };
  let adminA: Client;
  let adminB: Client;
  let user: CreatedUser;

  beforeAll(async () => {
    pair = await startPair({ OAUTH_SECRET_OVERLAP_S: '3' });
    adminA = await adminClient(pair.a.url);
    adminB = await adminClient(pair.b.url);
    user = await createUser(pair.a.url);
  });
  afterAll(() => pair?.close());

  it('PATCH changes only the members sent; a new redirect URI works on the other instance', async () => {
    const app = await registerClient(adminA, { name: 'Before' });
    const extra = 'https://partner.example/second-callback';
    const res = await adminA.patch(`/api/v1/oauth/clients/${app.client_id}`, {
      name: 'After',
      redirect_uris: [app.redirect_uris[0], extra],
      logo_uri: 'https://partner.example/logo.png',
      policy_uri: 'https://partner.example/privacy',
    });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.data).toMatchObject({
      client_id: app.client_id,
      name: 'After',
      redirect_uris: [app.redirect_uris[0], extra],
      scopes: app.scopes,
      logo_uri: 'https://partner.example/logo.png',
      client_uri: null,
      policy_uri: 'https://partner.example/privacy',
      tos_uri: null,
      public: false,
    });
    expect(Date.parse(res.body.data.updated_at)).toBeGreaterThanOrEqual(
      Date.parse(res.body.data.created_at),
    );
    expect((await adminB.get(`/api/v1/oauth/clients/${app.client_id}`)).body.data).toEqual(
      res.body.data,
    );
    // the second redirect URI is accepted by instance B
    const { redirect, verifier } = await authorize(pair.b.url, {
      client: { ...app, redirect_uris: [extra] },
      email: user.email,
      password: user.password,
    });
    expect(redirect.origin + redirect.pathname).toBe(extra);
    const tokens = await exchangeCode(
      pair.b.url,
      { ...app, redirect_uris: [extra] },
      redirect.searchParams.get('code')!,
      verifier,
    );
    expect(tokens.status).toBe(200);
    // null removes a branding member
    const cleared = await adminB.patch(`/api/v1/oauth/clients/${app.client_id}`, {
      logo_uri: null,
    });
    expect(cleared.status).toBe(200);
    expect(cleared.body.data.logo_uri).toBeNull();
    expect(cleared.body.data.policy_uri).toBe('https://partner.example/privacy');
  });

  it('the consent page shows the logo, the links and the admin scope as a warning', async () => {
    const app = await registerClient(adminA, {
      name: 'Branded',
      scopes: ['openid', 'users:read', 'admin'],
      logo_uri: 'https://cdn.partner.example/logo.png',
      client_uri: 'https://partner.example/',
      tos_uri: 'https://partner.example/terms',
    });
    const signedIn = await createUser(pair.a.url);
    const browser = new Browser(pair.a.url);
    let { res } = await followToPageOrApp(
      browser,
      await browser.get(browserAuthorizeUrl(app, 'openid users:read admin', 's')),
    );
    const uid = /\/oauth\/interaction\/([^/"?]+)\/login/.exec(res.body)![1];
    const csrf = /name="csrf" value="([^"]+)"/.exec(res.body)![1];
    ({ res } = await followToPageOrApp(
      browser,
      await browser.post(`/oauth/interaction/${uid}/login`, {
        csrf,
        email: signedIn.email,
        password: signedIn.password,
      }),
    ));
    expect(res.status).toBe(200);
    expect(res.body).toContain('<img class="app-logo" src="https://cdn.partner.example/logo.png"');
    expect(res.body).toContain('href="https://partner.example/"');
    expect(res.body).toContain('href="https://partner.example/terms"');
    expect(res.body).not.toContain('Privacy policy');
    expect(res.body).toMatch(/<li class="warning"[^>]*>.*Warning:/);
    expect(res.headers.get('content-security-policy')).toContain("img-src 'self' https:");
  });

  it('refuses bad input with the error envelope and changes nothing; 404, 403, 401', async () => {
    const app = await registerClient(adminA, { name: 'Unchanged' });
    const path = `/api/v1/oauth/clients/${app.client_id}`;
    const before = (await adminA.get(path)).body.data;
    for (const body of [
      { name: null },
      { name: '' },
      { redirect_uris: ['http://partner.example/cb'] },
      { redirect_uris: [] },
      { scopes: ['users:read', 'root'] },
      { logo_uri: 'http://partner.example/logo.png' },
      { policy_uri: 'not a url' },
      { client_secret: 'chosen' },
    ]) {
      const res = await adminA.patch(path, body);
      expect(res.status, JSON.stringify(body)).toBe(422);
      expect(res.body.error.code).toBe('validation_failed');
    }
    expect((await adminB.get(path)).body.data).toEqual(before);
    expect((await adminA.patch('/api/v1/oauth/clients/cli_unknown', { name: 'x' })).status).toBe(
      404,
    );
    expect((await adminA.post('/api/v1/oauth/clients/cli_unknown/secret', {})).status).toBe(404);
    const someone = await createUser(pair.a.url);
    expect((await someone.client.patch(path, { name: 'x' })).status).toBe(403);
    expect((await someone.client.post(`${path}/secret`, {})).status).toBe(403);
    expect((await request(pair.a.url, path, { method: 'PATCH', body: { name: 'x' } })).status).toBe(
      401,
    );
    expect((await request(pair.a.url, `${path}/secret`, { method: 'POST' })).status).toBe(401);
    const publicApp = await registerClient(adminA, { name: 'SPA', public: true });
    const rotatePublic = await adminA.post(
      `/api/v1/oauth/clients/${publicApp.client_id}/secret`,
      {},
    );
    expect(rotatePublic.status).toBe(409);
    expect(rotatePublic.body.error.code).toBe('conflict');
    expect((await adminB.get(path)).body.data).toEqual(before);
  });

  it('rotates the secret: shown once, the old one works for OAUTH_SECRET_OVERLAP_S on every instance, then stops', async () => {
    const app = await registerClient(adminA, { name: 'Rotating' });
    const old = app.client_secret!;
    const rotated = await adminA.post(`/api/v1/oauth/clients/${app.client_id}/secret`, {});
    // the overlap started at the rotation, before its answer arrived: it ends by this + 3 s
    const rotatedBy = Date.now();
    expect(rotated.status).toBe(200);
    expect(rotated.headers.get('cache-control')).toBe('no-store');
    const fresh = rotated.body.data.client_secret as string;
    expect(fresh).toMatch(/^acs_/);
    expect(fresh).not.toBe(old);
    expect(rotated.body.data.client_id).toBe(app.client_id);
    // never shown again
    expect(
      (await adminB.get(`/api/v1/oauth/clients/${app.client_id}`)).body.data,
    ).not.toHaveProperty('client_secret');
    for (const base of [pair.a.url, pair.b.url]) {
      expect(await secretWorks(base, app.client_id, fresh)).toBe(true);
      expect(await secretWorks(base, app.client_id, old)).toBe(true);
    }
    // a token exchange with the old secret works during the overlap
    const { redirect, verifier } = await authorize(pair.b.url, {
      client: app,
      email: user.email,
      password: user.password,
    });
    expect(
      (await exchangeCode(pair.b.url, app, redirect.searchParams.get('code')!, verifier)).status,
    ).toBe(200);
    await pastInstant(rotatedBy + 3_000); // OAUTH_SECRET_OVERLAP_S
    for (const base of [pair.a.url, pair.b.url]) {
      expect(await secretWorks(base, app.client_id, old)).toBe(false);
      expect(await secretWorks(base, app.client_id, fresh)).toBe(true);
    }
    // rotating twice: only the two latest secrets work
    const second = (await adminB.post(`/api/v1/oauth/clients/${app.client_id}/secret`, {})).body
      .data.client_secret as string;
    const third = (await adminA.post(`/api/v1/oauth/clients/${app.client_id}/secret`, {})).body.data
      .client_secret as string;
    expect(await secretWorks(pair.b.url, app.client_id, fresh)).toBe(false);
    expect(await secretWorks(pair.b.url, app.client_id, second)).toBe(true);
    expect(await secretWorks(pair.b.url, app.client_id, third)).toBe(true);
  });

  it('narrowing scopes ends the tokens that carry a dropped scope on every instance; others keep working', async () => {
    const app = await registerClient(adminA, {
      name: 'Narrowed',
      scopes: ['openid', 'offline_access', 'users:read', 'posts:read'],
    });
    const grant = async (who: CreatedUser, scope: string) => {
      const { redirect, verifier } = await authorize(pair.a.url, {
        client: app,
        email: who.email,
        password: who.password,
        scope,
        prompt: 'consent',
      });
      const res = await exchangeCode(pair.a.url, app, redirect.searchParams.get('code')!, verifier);
      expect(res.status).toBe(200);
      return res.body as { access_token: string; refresh_token: string };
    };
    const wide = await grant(user, 'openid offline_access users:read posts:read');
    const narrow = await grant(await createUser(pair.a.url), 'openid offline_access users:read');
    const res = await adminB.patch(`/api/v1/oauth/clients/${app.client_id}`, {
      scopes: ['openid', 'offline_access', 'users:read'],
    });
    expect(res.status).toBe(200);
    for (const base of [pair.a.url, pair.b.url]) {
      expect((await client(base, { bearer: wide.access_token }).get('/api/v1/users')).status).toBe(
        401,
      );
      expect(
        (await client(base, { bearer: narrow.access_token }).get('/api/v1/users')).status,
      ).toBe(200);
    }
    const refreshWide = await tokenRequest(pair.a.url, app, {
      grant_type: 'refresh_token',
      refresh_token: wide.refresh_token,
    });
    expect(refreshWide.body.error).toBe('invalid_grant');
    const refreshNarrow = await tokenRequest(pair.b.url, app, {
      grant_type: 'refresh_token',
      refresh_token: narrow.refresh_token,
    });
    expect(refreshNarrow.status).toBe(200);
    // the user can authorize again within the new scopes
    const again = await grant(user, 'openid offline_access users:read');
    expect(
      (await client(pair.b.url, { bearer: again.access_token }).get('/api/v1/users')).status,
    ).toBe(200);
  });
});
