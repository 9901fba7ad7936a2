import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freshDatabaseUrl, startApp, usingPostgres, type TestApp } from './helpers/app.js';
import { client } from './helpers/http.js';
import { adminClient, createUser, type CreatedUser } from './helpers/factories.js';
import {
  authorize,
  exchangeCode,
  registerClient,
  tokenRequest,
  type RegisteredClient,
} from './helpers/oauth.js';

const N = 8;

/**
 * Two instances on one database (PostgreSQL when DATABASE_URL is set, else one SQLite file): a code
 * or a refresh token is redeemed exactly once, whichever instances the requests reach.
 */
describe('OAuth on two instances sharing one database', () => {
  let a: TestApp;
  let b: TestApp;
  let dir: string | undefined;
  let user: CreatedUser;
  let partner: RegisteredClient;

  beforeAll(async () => {
    let url: string;
    if (usingPostgres) {
      url = freshDatabaseUrl();
    } else {
      dir = mkdtempSync(join(tmpdir(), 'atrium-oauth-'));
      url = `sqlite:${join(dir, 'shared.sqlite')}`;
    }
    a = await startApp({ DATABASE_URL: url });
    b = await startApp({ DATABASE_URL: url });
    user = await createUser(a.url);
    partner = await registerClient(await adminClient(a.url));
  });
  afterAll(async () => {
    await a?.close();
    await b?.close();
    if (dir) {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it(`gives tokens to exactly one of ${N} concurrent redemptions of one code`, async () => {
    const { redirect, verifier } = await authorize(a.url, {
      client: partner,
      email: user.email,
      password: user.password,
    });
    const code = redirect.searchParams.get('code')!;
    const results = await Promise.all(
      Array.from({ length: N }, (_, i) =>
        exchangeCode(i % 2 === 0 ? a.url : b.url, partner, code, verifier),
      ),
    );
    const ok = results.filter((r) => r.status === 200);
    expect(ok, JSON.stringify(results.map((r) => [r.status, r.body]))).toHaveLength(1);
    for (const r of results.filter((x) => x.status !== 200)) {
      expect(r.status).toBe(400);
      expect(r.body.error).toBe('invalid_grant');
    }
  });

  it(`rotates a refresh token for exactly one of ${N} concurrent uses`, async () => {
    const { redirect, verifier } = await authorize(b.url, {
      client: partner,
      email: user.email,
      password: user.password,
      scope: 'openid offline_access users:read',
      prompt: 'consent',
    });
    const tokens = await exchangeCode(a.url, partner, redirect.searchParams.get('code')!, verifier);
    expect(tokens.status).toBe(200);
    const results = await Promise.all(
      Array.from({ length: N }, (_, i) =>
        tokenRequest(i % 2 === 0 ? a.url : b.url, partner, {
          grant_type: 'refresh_token',
          refresh_token: tokens.body.refresh_token,
        }),
      ),
    );
    const ok = results.filter((r) => r.status === 200);
    expect(ok, JSON.stringify(results.map((r) => [r.status, r.body]))).toHaveLength(1);
    expect(
      results.filter((r) => r.status === 400 && r.body.error === 'invalid_grant'),
    ).toHaveLength(N - 1);
  });

  it('a revocation on one instance stops the access token on the other at once', async () => {
    const { redirect, verifier } = await authorize(a.url, {
      client: partner,
      email: user.email,
      password: user.password,
    });
    const res = await exchangeCode(a.url, partner, redirect.searchParams.get('code')!, verifier);
    const onB = client(b.url, { bearer: res.body.access_token });
    expect((await onB.get(`/api/v1/users/${user.id}`)).status).toBe(200);
    const revoke = await client(a.url, { bearer: user.token }).delete(
      `/api/v1/oauth/grants/${partner.client_id}`,
    );
    expect(revoke.status).toBe(204);
    expect((await onB.get(`/api/v1/users/${user.id}`)).status).toBe(401);
  });

  it('continues on one instance a sign-in started on the other (sessions are in the database)', async () => {
    const { redirect, verifier } = await authorize(a.url, {
      client: partner,
      email: user.email,
      password: user.password,
    });
    const res = await exchangeCode(b.url, partner, redirect.searchParams.get('code')!, verifier);
    expect(res.status).toBe(200);
  });
});
