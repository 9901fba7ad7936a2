import { createPublicKey, verify } from 'node:crypto';
import { DataSource } from 'typeorm';
import { OAuthArtifactsRepository } from '../src/identity/oauth-artifacts.repository.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PUBLIC_URL, startApp, type TestApp } from './helpers/app.js';
import { adminClient, createUser, type CreatedUser } from './helpers/factories.js';
import type { Client } from './helpers/http.js';
import {
  authorize,
  authorizeUrl,
  Browser,
  exchangeCode,
  followToPageOrApp,
  jwtParts,
  pkcePair,
  REDIRECT_URI,
  registerClient,
  tokenRequest,
  type RegisteredClient,
} from './helpers/oauth.js';

const OFFLINE = 'openid offline_access users:read';

describe('OAuth authorization server: protocol rules', () => {
  let t: TestApp;
  let admin: Client;
  let user: CreatedUser;
  let partner: RegisteredClient;
  let publicApp: RegisteredClient;

  beforeAll(async () => {
    t = await startApp();
    admin = await adminClient(t.url);
    user = await createUser(t.url);
    partner = await registerClient(admin);
    publicApp = await registerClient(admin, {
      public: true,
      redirect_uris: ['http://127.0.0.1:8765/cb'],
    });
  });
  afterAll(() => t?.close());

  /** Tokens with offline_access (no prompt=consent needed: see docs/oauth.md). */
  async function offlineTokens(client = partner) {
    const { redirect, verifier } = await authorize(t.url, {
      client,
      email: user.email,
      password: user.password,
      scope: OFFLINE,
    });
    const res = await exchangeCode(t.url, client, redirect.searchParams.get('code')!, verifier);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.refresh_token).toBeTruthy();
    return res.body as { access_token: string; refresh_token: string; id_token: string };
  }

  async function authorizeStart(params: Record<string, string | undefined>) {
    const browser = new Browser(t.url);
    return browser.get(authorizeUrl(params));
  }

  it('publishes discovery metadata saying exactly what is supported', async () => {
    const res = await fetch(`${t.url}/oauth/.well-known/openid-configuration`);
    expect(res.status).toBe(200);
    const meta = (await res.json()) as Record<string, unknown>;
    expect(meta.issuer).toBe(`${PUBLIC_URL}/oauth`);
    expect(meta.authorization_endpoint).toBe(`${PUBLIC_URL}/oauth/auth`);
    expect(meta.token_endpoint).toBe(`${PUBLIC_URL}/oauth/token`);
    expect(meta.jwks_uri).toBe(`${PUBLIC_URL}/oauth/jwks`);
    expect(meta.revocation_endpoint).toBe(`${PUBLIC_URL}/oauth/token/revocation`);
    expect(meta.code_challenge_methods_supported).toEqual(['S256']);
    expect(meta.response_types_supported).toEqual(['code']);
    expect(meta.grant_types_supported).toEqual(['authorization_code', 'refresh_token']);
    expect(meta.authorization_response_iss_parameter_supported).toBe(true);
    expect(meta.request_uri_parameter_supported).toBe(false);
    expect(meta).not.toHaveProperty('registration_endpoint');
    expect(meta).not.toHaveProperty('pushed_authorization_request_endpoint');
    expect(meta.scopes_supported).toEqual(
      expect.arrayContaining(['openid', 'offline_access', 'users:read', 'messages:write']),
    );
  });

  it('serves the service RSA key in the JWKS, and access tokens verify with it', async () => {
    const jwks = (await (await fetch(`${t.url}/oauth/jwks`)).json()) as {
      keys: Record<string, string>[];
    };
    expect(jwks.keys).toHaveLength(1);
    const jwk = jwks.keys[0];
    expect(jwk).toMatchObject({ kty: 'RSA', alg: 'RS256', use: 'sig' });
    expect(jwk).not.toHaveProperty('d');
    const { redirect, verifier } = await authorize(t.url, {
      client: partner,
      email: user.email,
      password: user.password,
    });
    const tokens = await exchangeCode(t.url, partner, redirect.searchParams.get('code')!, verifier);
    const [h, p, s] = (tokens.body.access_token as string).split('.');
    expect(jwtParts(tokens.body.access_token).header.kid).toBe(jwk.kid);
    const key = createPublicKey({ key: jwk, format: 'jwk' });
    expect(verify('sha256', Buffer.from(`${h}.${p}`), key, Buffer.from(s, 'base64url'))).toBe(true);
  });

  it('refuses an authorization request without PKCE, with plain PKCE, or asking for implicit', async () => {
    const base = {
      client_id: partner.client_id,
      response_type: 'code',
      redirect_uri: REDIRECT_URI,
      scope: 'openid',
      state: 's1',
    };
    const missing = await authorizeStart(base);
    expect(missing.status).toBe(303);
    const m = new URL(missing.headers.get('location')!);
    expect(m.origin + m.pathname).toBe(REDIRECT_URI);
    expect(m.searchParams.get('error')).toBe('invalid_request');
    expect(m.searchParams.get('error_description')).toMatch(/PKCE|code_challenge/);
    expect(m.searchParams.get('state')).toBe('s1');
    expect(m.searchParams.get('iss')).toBe(`${PUBLIC_URL}/oauth`);

    const plain = await authorizeStart({
      ...base,
      code_challenge: pkcePair().verifier,
      code_challenge_method: 'plain',
    });
    const p = new URL(plain.headers.get('location')!);
    expect(p.searchParams.get('error')).toBe('invalid_request');
    expect(p.searchParams.get('error_description')).toMatch(/code_challenge_method|plain|PKCE/);

    const implicit = await authorizeStart({
      ...base,
      response_type: 'token',
      code_challenge: pkcePair().challenge,
      code_challenge_method: 'S256',
    });
    const loc = implicit.headers.get('location') ?? '';
    expect(loc).toContain('error=unsupported_response_type');
    expect(loc).not.toContain('access_token');
  });

  it.each([
    ['a trailing slash', `${REDIRECT_URI}/`, () => partner],
    ['an extra query', `${REDIRECT_URI}?x=1`, () => partner],
    ['another host', 'https://evil.example/callback', () => partner],
    ['localhost for 127.0.0.1', 'http://localhost:8765/cb', () => publicApp],
  ])('shows an error page and never redirects for a redirect URI with %s', async (_l, uri, c) => {
    const res = await authorizeStart({
      client_id: c().client_id,
      response_type: 'code',
      redirect_uri: uri,
      scope: 'openid',
      state: 's2',
      code_challenge: pkcePair().challenge,
      code_challenge_method: 'S256',
    });
    expect(res.status).toBe(400);
    expect(res.headers.get('location')).toBeNull();
    expect(res.headers.get('content-type')).toMatch(/text\/html/);
    expect(res.body).toContain('invalid_redirect_uri');
    expect(res.body).not.toContain('evil.example');
    expect(res.headers.get('content-security-policy')).toContain("frame-ancestors 'none'");
  });

  it('requires redirect_uri even when the client has a single one registered', async () => {
    const res = await authorizeStart({
      client_id: partner.client_id,
      response_type: 'code',
      scope: 'openid',
      code_challenge: pkcePair().challenge,
      code_challenge_method: 'S256',
    });
    expect(res.status).toBe(400);
    expect(res.headers.get('location')).toBeNull();
  });

  it('shows an error page for an unknown client', async () => {
    const res = await authorizeStart({
      client_id: 'cli_unknown',
      response_type: 'code',
      redirect_uri: REDIRECT_URI,
      code_challenge: pkcePair().challenge,
      code_challenge_method: 'S256',
    });
    expect(res.status).toBe(400);
    expect(res.headers.get('location')).toBeNull();
    expect(res.body).toContain('invalid_client');
  });

  it('refuses a code exchanged with the wrong verifier or without one', async () => {
    const { redirect } = await authorize(t.url, {
      client: partner,
      email: user.email,
      password: user.password,
    });
    const code = redirect.searchParams.get('code')!;
    const missing = await tokenRequest(t.url, partner, {
      grant_type: 'authorization_code',
      code,
      redirect_uri: REDIRECT_URI,
    });
    expect(missing.status).toBe(400);
    expect(['invalid_grant', 'invalid_request']).toContain(missing.body.error);
    const wrong = await exchangeCode(t.url, partner, code, pkcePair().verifier);
    expect(wrong.status).toBe(400);
    expect(wrong.body.error).toBe('invalid_grant');
  });

  it('answers token endpoint errors as RFC 6749 section 5.2 says', async () => {
    const password = await tokenRequest(t.url, partner, {
      grant_type: 'password',
      username: user.email,
      password: user.password,
    });
    expect(password.status).toBe(400);
    expect(password.body.error).toBe('unsupported_grant_type');
    expect(password.headers.get('cache-control')).toBe('no-store');
    expect(password.headers.get('content-type')).toMatch(/application\/json/);

    const clientCredentials = await tokenRequest(t.url, partner, {
      grant_type: 'client_credentials',
    });
    expect(clientCredentials.body.error).toBe('unsupported_grant_type');

    const noGrant = await tokenRequest(t.url, partner, {});
    expect(noGrant.status).toBe(400);
    expect(noGrant.body.error).toBe('invalid_request');

    const badCode = await tokenRequest(t.url, partner, {
      grant_type: 'authorization_code',
      code: 'not-a-code',
      redirect_uri: REDIRECT_URI,
      code_verifier: pkcePair().verifier,
    });
    expect(badCode.status).toBe(400);
    expect(badCode.body.error).toBe('invalid_grant');
    expect(typeof badCode.body.error_description).toBe('string');

    const wrongSecret = await tokenRequest(
      t.url,
      { ...partner, client_secret: 'acs_wrong' },
      { grant_type: 'authorization_code', code: 'x', code_verifier: pkcePair().verifier },
    );
    expect(wrongSecret.status).toBe(401);
    expect(wrongSecret.body.error).toBe('invalid_client');
  });

  it('binds a code to its client and redirect URI, and a client to its secret (RFC 6749 4.1.3, 3.2.1)', async () => {
    const other = await registerClient(admin, {
      redirect_uris: [REDIRECT_URI, 'https://partner.example/other'],
    });
    const { redirect, verifier } = await authorize(t.url, {
      client: partner,
      email: user.email,
      password: user.password,
    });
    const code = redirect.searchParams.get('code')!;
    const form = {
      grant_type: 'authorization_code',
      code,
      redirect_uri: REDIRECT_URI,
      code_verifier: verifier,
    };
    // redeemed by another client (with its own valid secret)
    const foreign = await tokenRequest(t.url, other, form);
    expect(foreign.status).toBe(400);
    expect(foreign.body.error).toBe('invalid_grant');
    // a confidential client that does not authenticate
    const anonymous = await tokenRequest(t.url, { ...partner, client_secret: undefined }, form);
    expect(anonymous.status).toBe(401);
    expect(anonymous.body.error).toBe('invalid_client');

    const second = await authorize(t.url, {
      client: other,
      email: user.email,
      password: user.password,
    });
    // another registered redirect URI than the one the code was issued for
    const elsewhere = await tokenRequest(t.url, other, {
      grant_type: 'authorization_code',
      code: second.redirect.searchParams.get('code')!,
      redirect_uri: 'https://partner.example/other',
      code_verifier: second.verifier,
    });
    expect(elsewhere.status).toBe(400);
    expect(elsewhere.body.error).toBe('invalid_grant');
  });

  it('refuses a scope the app is not registered for (invalid_scope) and a request_uri', async () => {
    const { challenge } = pkcePair();
    const base = {
      client_id: partner.client_id,
      response_type: 'code',
      redirect_uri: REDIRECT_URI,
      state: 's4',
      code_challenge: challenge,
      code_challenge_method: 'S256',
    };
    const scope = await authorizeStart({ ...base, scope: 'openid orders:write' });
    expect(scope.status).toBe(303);
    const s = new URL(scope.headers.get('location')!);
    expect(s.origin + s.pathname).toBe(REDIRECT_URI);
    expect(s.searchParams.get('error')).toBe('invalid_scope');
    expect(s.searchParams.get('state')).toBe('s4');
    expect(s.searchParams.get('iss')).toBe(`${PUBLIC_URL}/oauth`);

    const byReference = await authorizeStart({
      ...base,
      scope: 'openid',
      request_uri: 'https://partner.example/request.jwt',
    });
    const r = new URL(byReference.headers.get('location')!);
    expect(r.searchParams.get('error')).toMatch(/^(request_uri_not_supported|invalid_request)$/);
    expect(r.searchParams.get('code')).toBeNull();
  });

  it('refuses a refresh token presented by another client', async () => {
    const tokens = await offlineTokens();
    const other = await registerClient(admin);
    const stolen = await tokenRequest(t.url, other, {
      grant_type: 'refresh_token',
      refresh_token: tokens.refresh_token,
    });
    expect(stolen.status).toBe(400);
    expect(stolen.body.error).toBe('invalid_grant');
  });

  it('refuses a replayed code and revokes what the first redemption issued', async () => {
    const { redirect, verifier } = await authorize(t.url, {
      client: partner,
      email: user.email,
      password: user.password,
      scope: OFFLINE,
      prompt: 'consent',
    });
    const code = redirect.searchParams.get('code')!;
    const first = await exchangeCode(t.url, partner, code, verifier);
    expect(first.status).toBe(200);
    const replay = await exchangeCode(t.url, partner, code, verifier);
    expect(replay.status).toBe(400);
    expect(replay.body.error).toBe('invalid_grant');
    const refresh = await tokenRequest(t.url, partner, {
      grant_type: 'refresh_token',
      refresh_token: first.body.refresh_token,
    });
    expect(refresh.status).toBe(400);
    expect(refresh.body.error).toBe('invalid_grant');
  });

  it('refuses an expired code', async () => {
    const { redirect, verifier } = await authorize(t.url, {
      client: partner,
      email: user.email,
      password: user.password,
    });
    const code = redirect.searchParams.get('code')!;
    const ds = t.app.get(DataSource);
    // codes live 60 s: age this one instead of waiting
    await ds.query(
      `UPDATE oauth_artifacts SET expires_at = ${Date.now() - 1000} WHERE kind = 'AuthorizationCode'`,
    );
    const res = await exchangeCode(t.url, partner, code, verifier);
    expect(res.status).toBe(400);
    expect(res.body.error).toBe('invalid_grant');
    // and the purge (every 10 minutes) removes it from the table
    await t.app.get(OAuthArtifactsRepository).purgeExpired();
    const left = await ds.query(
      `SELECT COUNT(*) AS n FROM oauth_artifacts WHERE kind = 'AuthorizationCode' AND expires_at < ${Date.now()}`,
    );
    expect(Number(left[0].n)).toBe(0);
  });

  it('issues a refresh token only with offline_access', async () => {
    const { redirect, verifier } = await authorize(t.url, {
      client: partner,
      email: user.email,
      password: user.password,
      scope: 'openid users:read',
    });
    const res = await exchangeCode(t.url, partner, redirect.searchParams.get('code')!, verifier);
    expect(res.status).toBe(200);
    expect(res.body.refresh_token).toBeUndefined();
    const offline = await offlineTokens();
    expect(offline.refresh_token).toBeTruthy();
  });

  it('honours offline_access without prompt=consent: asked once on the consent page, then remembered', async () => {
    const member = await createUser(t.url);
    const browser = new Browser(t.url);
    /** Authorizes `scope` for `member` in `browser` and exchanges the code. */
    const tokensFor = async (scope: string) => {
      const { redirect, verifier } = await authorize(t.url, {
        client: partner,
        email: member.email,
        password: member.password,
        scope,
        browser,
      });
      return exchangeCode(t.url, partner, redirect.searchParams.get('code')!, verifier);
    };
    const firstTokens = await tokensFor(OFFLINE);
    expect(firstTokens.status).toBe(200);
    expect(firstTokens.body.refresh_token).toBeTruthy();
    const grants = await member.client.get('/api/v1/oauth/grants');
    expect(grants.body.data[0].scopes).toContain('offline_access');

    // the same request again, in the same browser: no page at all, and again a refresh token
    const { verifier, challenge } = pkcePair();
    const again = await browser.get(
      authorizeUrl({
        client_id: partner.client_id,
        response_type: 'code',
        redirect_uri: REDIRECT_URI,
        scope: OFFLINE,
        state: 's2',
        code_challenge: challenge,
        code_challenge_method: 'S256',
      }),
    );
    const { res, url } = await followToPageOrApp(browser, again);
    expect(res.status).toBe(303);
    const code = new URL(url).searchParams.get('code');
    expect(code, url).toBeTruthy();
    const secondTokens = await exchangeCode(t.url, partner, code!, verifier);
    expect(secondTokens.body.refresh_token).toBeTruthy();

    // a request without offline_access still gets none, even though the grant has it
    const plainTokens = await tokensFor('openid users:read');
    expect(plainTokens.status).toBe(200);
    expect(plainTokens.body.refresh_token).toBeUndefined();
  });

  it('asks for offline_access on the consent page, and prompt=none without that consent is consent_required', async () => {
    const member = await createUser(t.url);
    const first = await authorize(t.url, {
      client: partner,
      email: member.email,
      password: member.password,
      scope: 'openid users:read',
    });
    // signed in and consented to the other scopes: offline_access alone brings the consent page
    const { challenge } = pkcePair();
    const params = {
      client_id: partner.client_id,
      response_type: 'code',
      redirect_uri: REDIRECT_URI,
      scope: OFFLINE,
      state: 's3',
      code_challenge: challenge,
      code_challenge_method: 'S256',
    };
    const silent = await followToPageOrApp(
      first.browser,
      await first.browser.get(authorizeUrl({ ...params, prompt: 'none' })),
    );
    expect(new URL(silent.url).searchParams.get('error')).toBe('consent_required');
    const page = await followToPageOrApp(
      first.browser,
      await first.browser.get(authorizeUrl(params)),
    );
    expect(page.res.status).toBe(200);
    expect(page.res.body).toContain('Keep this access when you are not using the app');
  });

  it('ignores offline_access for an app not registered for it: no refresh token', async () => {
    const online = await registerClient(admin, { scopes: ['openid', 'users:read'] });
    const { redirect, verifier } = await authorize(t.url, {
      client: online,
      email: user.email,
      password: user.password,
      scope: OFFLINE,
    });
    const res = await exchangeCode(t.url, online, redirect.searchParams.get('code')!, verifier);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.refresh_token).toBeUndefined();
  });

  it('rotates refresh tokens on every use; a reused one fails and revokes the grant', async () => {
    const first = await offlineTokens();
    const second = await tokenRequest(t.url, partner, {
      grant_type: 'refresh_token',
      refresh_token: first.refresh_token,
    });
    expect(second.status, JSON.stringify(second.body)).toBe(200);
    expect(second.body.refresh_token).toBeTruthy();
    expect(second.body.refresh_token).not.toBe(first.refresh_token);
    expect(jwtParts(second.body.access_token).payload.scope).toBe('users:read');

    const reuse = await tokenRequest(t.url, partner, {
      grant_type: 'refresh_token',
      refresh_token: first.refresh_token,
    });
    expect(reuse.status).toBe(400);
    expect(reuse.body.error).toBe('invalid_grant');
    // the whole grant is gone: the rotated token fails too
    const after = await tokenRequest(t.url, partner, {
      grant_type: 'refresh_token',
      refresh_token: second.body.refresh_token,
    });
    expect(after.status).toBe(400);
    expect(after.body.error).toBe('invalid_grant');
  });

  it('revokes a refresh token at the RFC 7009 revocation endpoint', async () => {
    const tokens = await offlineTokens();
    const auth = `Basic ${Buffer.from(`${partner.client_id}:${partner.client_secret}`).toString('base64')}`;
    const res = await fetch(`${t.url}/oauth/token/revocation`, {
      method: 'POST',
      headers: { authorization: auth, 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ token: tokens.refresh_token }).toString(),
    });
    expect(res.status).toBe(200);
    const refresh = await tokenRequest(t.url, partner, {
      grant_type: 'refresh_token',
      refresh_token: tokens.refresh_token,
    });
    expect(refresh.body.error).toBe('invalid_grant');
  });

  it('works for a public client (PKCE, no secret)', async () => {
    const { redirect, verifier } = await authorize(t.url, {
      client: publicApp,
      email: user.email,
      password: user.password,
    });
    expect(redirect.origin).toBe('http://127.0.0.1:8765');
    const res = await exchangeCode(t.url, publicApp, redirect.searchParams.get('code')!, verifier);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(jwtParts(res.body.access_token).payload.client_id).toBe(publicApp.client_id);
  });

  it('persists grants, refresh tokens and sessions in the database', async () => {
    const tokens = await offlineTokens();
    const stored = await t.app
      .get(DataSource)
      .query(`SELECT kind FROM oauth_artifacts WHERE account_id = '${user.id}'`);
    expect(stored.map((r: { kind: string }) => r.kind)).toEqual(
      expect.arrayContaining(['Grant', 'RefreshToken', 'Session']),
    );
    const refreshed = await tokenRequest(t.url, partner, {
      grant_type: 'refresh_token',
      refresh_token: tokens.refresh_token,
    });
    expect(refreshed.status).toBe(200);
  });
});
