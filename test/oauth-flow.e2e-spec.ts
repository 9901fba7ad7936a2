import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PUBLIC_URL, startApp, type TestApp } from './helpers/app.js';
import { adminClient, createUser, type CreatedUser } from './helpers/factories.js';
import type { Client } from './helpers/http.js';
import {
  authorize,
  exchangeCode,
  jwtParts,
  registerClient,
  type RegisteredClient,
} from './helpers/oauth.js';

describe('OAuth authorization code flow (HTTP)', () => {
  let t: TestApp;
  let admin: Client;
  let user: CreatedUser;
  let partner: RegisteredClient;

  beforeAll(async () => {
    t = await startApp();
    admin = await adminClient(t.url);
    user = await createUser(t.url);
    partner = await registerClient(admin);
  });
  afterAll(() => t?.close());

  it('signs in, consents and exchanges the code with PKCE for an RFC 9068 access token', async () => {
    const { redirect, verifier } = await authorize(t.url, {
      client: partner,
      email: user.email,
      password: user.password,
      state: 'xyz-state',
    });
    expect(redirect.origin + redirect.pathname).toBe(partner.redirect_uris[0]);
    expect(redirect.searchParams.get('state')).toBe('xyz-state');
    expect(redirect.searchParams.get('iss')).toBe(`${PUBLIC_URL}/oauth`);
    const code = redirect.searchParams.get('code');
    expect(code).toBeTruthy();

    const tokens = await exchangeCode(t.url, partner, code!, verifier);
    expect(tokens.status, JSON.stringify(tokens.body)).toBe(200);
    expect(tokens.body.token_type).toBe('Bearer');
    expect(tokens.body.expires_in).toBe(600);
    const { header, payload } = jwtParts(tokens.body.access_token);
    expect(header).toMatchObject({ typ: 'at+jwt', alg: 'RS256' });
    expect(payload).toMatchObject({
      iss: `${PUBLIC_URL}/oauth`,
      aud: `${PUBLIC_URL}/api`,
      sub: user.id,
      client_id: partner.client_id,
      scope: 'users:read',
    });
    expect(payload.exp - payload.iat).toBe(600);
    expect(typeof payload.gid).toBe('string');
  });
});
