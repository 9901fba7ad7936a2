import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPair, type TestApp } from './helpers/app.js';
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
  type RegisteredClient,
} from './helpers/oauth.js';

/**
 * A password change, a demotion and a deletion end the user's partner-app sign-ins on every
 * instance: the `/oauth` browser session (prompt=none no longer yields a code), refresh tokens, and
 * access tokens at once; the grant (the consent) stays. Tokens come from instance A, the change is
 * made on instance B.
 */
describe('ending a user partner-app sign-ins, across two instances', () => {
  let pair: { a: TestApp; b: TestApp; close(): Promise<void> };
  let adminA: Client;
  let adminB: Client;
  let partner: RegisteredClient;

  beforeAll(async () => {
    pair = await startPair();
    adminA = await adminClient(pair.a.url);
    adminB = await adminClient(pair.b.url);
    partner = await registerClient(adminA, {
      scopes: ['openid', 'offline_access', 'users:read', 'admin'],
    });
  });
  afterAll(() => pair?.close());

  async function signedInPartner(user: CreatedUser, scope = 'openid offline_access users:read') {
    const { redirect, verifier, browser } = await authorize(pair.a.url, {
      client: partner,
      email: user.email,
      password: user.password,
      scope,
      prompt: 'consent',
    });
    const res = await exchangeCode(
      pair.a.url,
      partner,
      redirect.searchParams.get('code')!,
      verifier,
    );
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    const tokens = res.body as { access_token: string; refresh_token: string };
    // both instances accept the access token
    for (const base of [pair.a.url, pair.b.url]) {
      expect(
        (await request(base, '/api/v1/users', { auth: { bearer: tokens.access_token } })).status,
      ).toBe(200);
    }
    return { tokens, browser };
  }

  /** The browser's `/oauth` session answers prompt=none with a code, or with login_required. */
  async function silentAuthorization(browser: Browser): Promise<URL> {
    const start = await browser.get(
      browserAuthorizeUrl(partner, 'openid users:read', 'silent', { prompt: 'none' }),
    );
    const { url } = await followToPageOrApp(browser, start);
    return new URL(url);
  }

  async function expectEnded(
    user: CreatedUser,
    signedIn: Awaited<ReturnType<typeof signedInPartner>>,
  ) {
    for (const base of [pair.a.url, pair.b.url]) {
      const res = await request(base, '/api/v1/users', {
        auth: { bearer: signedIn.tokens.access_token },
      });
      expect(res.status).toBe(401);
    }
    const refreshed = await tokenRequest(pair.a.url, partner, {
      grant_type: 'refresh_token',
      refresh_token: signedIn.tokens.refresh_token,
    });
    expect(refreshed.status).toBe(400);
    expect(refreshed.body.error).toBe('invalid_grant');
    const silent = await silentAuthorization(signedIn.browser);
    expect(silent.searchParams.get('code')).toBeNull();
    expect(silent.searchParams.get('error')).toBe('login_required');
  }

  it('a password change: tokens and the /oauth session end at once; the grant stays and a new sign-in needs no consent', async () => {
    const user = await createUser(pair.a.url);
    const signedIn = await signedInPartner(user);
    // before: the session gives a code silently
    expect((await silentAuthorization(signedIn.browser)).searchParams.get('code')).toBeTruthy();

    const password = `new-${user.password}`;
    const changed = await client(pair.b.url, { bearer: user.token }).patch(
      `/api/v1/users/${user.id}`,
      { password },
    );
    expect(changed.status).toBe(200);
    await expectEnded(user, signedIn);

    // the grant is still listed, and signing in again (new password) needs no second consent
    const own = client(pair.b.url, { basic: [user.email, password] });
    const grants = await own.get('/api/v1/oauth/grants');
    expect(grants.status).toBe(200);
    expect(grants.body.data.map((g: { client_id: string }) => g.client_id)).toContain(
      partner.client_id,
    );
    const again = await authorize(pair.a.url, {
      client: partner,
      email: user.email,
      password,
      scope: 'openid offline_access users:read',
      browser: signedIn.browser,
    });
    const res = await exchangeCode(
      pair.a.url,
      partner,
      again.redirect.searchParams.get('code')!,
      again.verifier,
    );
    expect(res.status).toBe(200);
    expect(
      (await request(pair.b.url, '/api/v1/users', { auth: { bearer: res.body.access_token } }))
        .status,
    ).toBe(200);
  });

  it('a demotion (ADMIN to USER) ends them too; a name change does not', async () => {
    const user = await createUser(pair.a.url, { role: 'ADMIN' });
    const signedIn = await signedInPartner(user, 'openid offline_access users:read admin');
    expect((await adminB.patch(`/api/v1/users/${user.id}`, { name: 'Renamed' })).status).toBe(200);
    expect(
      (
        await request(pair.a.url, '/api/v1/users', {
          auth: { bearer: signedIn.tokens.access_token },
        })
      ).status,
    ).toBe(200);
    expect((await adminB.patch(`/api/v1/users/${user.id}`, { role: 'USER' })).status).toBe(200);
    await expectEnded(user, signedIn);
  });

  it('a deletion ends them', async () => {
    const user = await createUser(pair.a.url);
    const signedIn = await signedInPartner(user);
    expect((await adminB.delete(`/api/v1/users/${user.id}`)).status).toBe(204);
    for (const base of [pair.a.url, pair.b.url]) {
      expect(
        (await request(base, '/api/v1/users', { auth: { bearer: signedIn.tokens.access_token } }))
          .status,
      ).toBe(401);
    }
    const refreshed = await tokenRequest(pair.b.url, partner, {
      grant_type: 'refresh_token',
      refresh_token: signedIn.tokens.refresh_token,
    });
    expect(refreshed.body.error).toBe('invalid_grant');
  });
});
