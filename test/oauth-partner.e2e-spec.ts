import * as oidc from 'openid-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TOPICS } from '../src/events/events.service.js';
import { PUBLIC_URL, startApp, type TestApp } from './helpers/app.js';
import { adminClient, createUser, unique, type CreatedUser } from './helpers/factories.js';
import { Browser, REDIRECT_URI, registerClient, signInAndConsent } from './helpers/oauth.js';
import { connect, gql, listening, subscribe } from './subscriptions-helpers.js';

/**
 * The whole flow as a partner app runs it with `openid-client` (the library docs/oauth.md's quick
 * start uses): discovery, PKCE S256, the authorization URL, the code exchange (state and RFC 9207
 * `iss` checked by the library), REST, GraphQL over HTTP and a graphql-ws subscription with the
 * access token, refresh, revocation.
 */
describe('a partner app built with openid-client', () => {
  let t: TestApp;
  let user: CreatedUser;
  let config: oidc.Configuration;
  let clientId: string;

  beforeAll(async () => {
    t = await startApp();
    const admin = await adminClient(t.url);
    user = await createUser(t.url);
    const app = await registerClient(admin, {
      name: 'Acme Invoices',
      scopes: ['openid', 'email', 'offline_access', 'users:read', 'messages:read'],
    });
    clientId = app.client_id;
    // the issuer (PUBLIC_URL) is not resolvable here: every request goes to the listening address
    const toListener: oidc.CustomFetch = (url, options) =>
      fetch(url.replace(PUBLIC_URL, t.url), options);
    config = await oidc.discovery(
      new URL(`${PUBLIC_URL}/oauth`),
      app.client_id,
      undefined,
      oidc.ClientSecretBasic(app.client_secret),
      { execute: [oidc.allowInsecureRequests], [oidc.customFetch]: toListener },
    );
    config[oidc.customFetch] = toListener;
  });
  afterAll(() => t?.close());

  /** The authorization URL a partner builds (PKCE S256, a fresh state), signed in and consented. */
  async function authorizeAsPartner(scope: string) {
    const verifier = oidc.randomPKCECodeVerifier();
    const state = oidc.randomState();
    const authorizationUrl = oidc.buildAuthorizationUrl(config, {
      redirect_uri: REDIRECT_URI,
      scope,
      code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
      state,
    });
    const callback = await signInAndConsent(new Browser(t.url), authorizationUrl.href, user);
    return { callback, verifier, state };
  }

  it('authorizes with PKCE, calls REST, GraphQL and a subscription, refreshes and revokes', async () => {
    const metadata = config.serverMetadata();
    expect(metadata.issuer).toBe(`${PUBLIC_URL}/oauth`);
    expect(metadata.code_challenge_methods_supported).toEqual(['S256']);
    expect(metadata.authorization_response_iss_parameter_supported).toBe(true);

    const { callback, verifier, state } = await authorizeAsPartner(
      'openid email offline_access users:read messages:read',
    );
    expect(callback.origin + callback.pathname).toBe(REDIRECT_URI);

    const tokens = await oidc.authorizationCodeGrant(config, callback, {
      pkceCodeVerifier: verifier,
      expectedState: state,
    });
    expect(tokens.token_type).toBe('bearer');
    expect(tokens.claims()?.sub).toBe(user.id);
    expect(tokens.claims()?.email).toBe(user.email);
    expect(tokens.refresh_token).toBeTruthy();

    // REST, as the library calls a protected resource
    const me = await oidc.fetchProtectedResource(
      config,
      tokens.access_token,
      new URL(`${PUBLIC_URL}/api/v1/users/${user.id}`),
      'GET',
    );
    expect(me.status).toBe(200);
    expect(((await me.json()) as { data: { id: string } }).data.id).toBe(user.id);

    // GraphQL over HTTP
    const body = await gql(t.url, { bearer: tokens.access_token }, '{ me { id email } }');
    expect(body.errors).toBeUndefined();
    expect(body.data?.me).toEqual({ id: user.id, email: user.email });

    // a graphql-ws subscription
    const room = await user.client.post('/api/v1/rooms', { name: unique('partner-room-') });
    expect(room.status).toBe(201);
    const roomId = room.body.data.id as string;
    const socket = await connect(t.url, { bearer: tokens.access_token });
    const sub = subscribe(
      socket,
      'subscription($r: ID!) { messageAdded(roomId: $r) { content } }',
      { r: roomId },
    );
    await listening(t, TOPICS.messageAdded(roomId));
    const sent = await user.client.post(`/api/v1/rooms/${roomId}/messages`, {
      content: 'for the partner',
    });
    expect(sent.status).toBe(201);
    expect((await sub.waitFor(1))[0]).toEqual({ messageAdded: { content: 'for the partner' } });
    await socket.dispose();

    // refresh: a new pair, the new access token works
    const refreshed = await oidc.refreshTokenGrant(config, tokens.refresh_token!);
    expect(refreshed.refresh_token).toBeTruthy();
    expect(refreshed.refresh_token).not.toBe(tokens.refresh_token);
    const again = await oidc.fetchProtectedResource(
      config,
      refreshed.access_token,
      new URL(`${PUBLIC_URL}/api/v1/auth/me`),
      'GET',
    );
    expect(again.status).toBe(200);

    // revocation (RFC 7009) of the refresh token revokes the grant: both tokens stop working
    await oidc.tokenRevocation(config, refreshed.refresh_token!);
    await expect(oidc.refreshTokenGrant(config, refreshed.refresh_token!)).rejects.toMatchObject({
      error: 'invalid_grant',
    });
    // (the library turns the 401 and its WWW-Authenticate challenge into an error)
    await expect(
      oidc.fetchProtectedResource(
        config,
        refreshed.access_token,
        new URL(`${PUBLIC_URL}/api/v1/auth/me`),
        'GET',
      ),
    ).rejects.toMatchObject({ status: 401 });
    const grants = await user.client.get('/api/v1/oauth/grants');
    expect(grants.body.data.map((g: { client_id: string }) => g.client_id)).not.toContain(clientId);
  });

  it('rejects the callback when the state does not match (the library’s check)', async () => {
    const { callback, verifier } = await authorizeAsPartner('openid users:read');
    const refused = (await oidc
      .authorizationCodeGrant(config, callback, {
        pkceCodeVerifier: verifier,
        expectedState: oidc.randomState(),
      })
      .catch((err: unknown) => err)) as Error & { cause?: Error };
    expect(refused).toBeInstanceOf(Error);
    expect(`${refused.message}: ${refused.cause?.message}`).toMatch(/"state"/);
  });
});
