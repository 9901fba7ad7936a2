import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPair, type TestApp } from './helpers/app.js';
import { pastInstant } from './helpers/wait.js';
import { createUser, type CreatedUser } from './helpers/factories.js';
import { request } from './helpers/http.js';

interface Pair {
  access_token: string;
  refresh_token: string;
}

const signIn = async (base: string, user: CreatedUser): Promise<Pair> => {
  const res = await request(base, '/api/v1/auth/token', {
    method: 'POST',
    body: { email: user.email, password: user.password },
  });
  expect(res.status).toBe(200);
  return res.body as Pair;
};

const refresh = (base: string, token: string) =>
  request(base, '/api/v1/auth/refresh', { method: 'POST', body: { refresh_token: token } });

const logout = (base: string, token: unknown) =>
  request(base, '/api/v1/auth/logout', { method: 'POST', body: { refresh_token: token } });

const me = (base: string, access: string) =>
  request(base, '/api/v1/auth/me', { headers: { authorization: `Bearer ${access}` } });

/**
 * First-party sessions on two instances: the refresh reuse grace window (REFRESH_REUSE_GRACE_S,
 * 2 s here) and sign-out (POST /auth/logout).
 */
describe('first-party refresh: reuse grace window and sign-out', () => {
  let pair: { a: TestApp; b: TestApp; close(): Promise<void> };
  let user: CreatedUser;

  beforeAll(async () => {
    pair = await startPair({ REFRESH_REUSE_GRACE_S: '2' });
    user = await createUser(pair.a.url);
  });
  afterAll(() => pair?.close());

  it('two tabs refreshing at once (on two instances) get the same new pair and keep the session', async () => {
    const first = await signIn(pair.a.url, user);
    const [x, y] = await Promise.all([
      refresh(pair.a.url, first.refresh_token),
      refresh(pair.b.url, first.refresh_token),
    ]);
    expect([x.status, y.status]).toEqual([200, 200]);
    expect(y.body).toEqual(x.body);
    expect(x.body.refresh_token).not.toBe(first.refresh_token);
    // the session goes on: the new refresh token rotates once more
    const next = await refresh(pair.b.url, x.body.refresh_token);
    expect(next.status).toBe(200);
    expect((await me(pair.a.url, next.body.access_token)).status).toBe(200);
  });

  it('a reuse after the window revokes the family, as before', async () => {
    const first = await signIn(pair.a.url, user);
    const second = await refresh(pair.a.url, first.refresh_token);
    // the window started at the rotation, before its answer arrived: it ends by this + 2 s
    const rotatedBy = Date.now();
    expect(second.status).toBe(200);
    await pastInstant(rotatedBy + 2_000); // REFRESH_REUSE_GRACE_S
    const late = await refresh(pair.b.url, first.refresh_token);
    expect(late.status).toBe(401);
    expect(late.body.error.code).toBe('unauthorized');
    expect((await refresh(pair.a.url, second.body.refresh_token)).status).toBe(401);
  });

  it('POST /auth/logout ends the family on every instance; other sign-ins stay', async () => {
    const session = await signIn(pair.a.url, user);
    const other = await signIn(pair.a.url, user);
    const rotated = await refresh(pair.a.url, session.refresh_token);
    expect(rotated.status).toBe(200);
    // signing out with the first (already used) token ends the whole sign-in
    const out = await logout(pair.b.url, session.refresh_token);
    expect(out.status).toBe(204);
    expect(out.text).toBe('');
    expect((await refresh(pair.a.url, rotated.body.refresh_token)).status).toBe(401);
    // within the grace window too: nothing is handed out for a signed-out token
    expect((await refresh(pair.b.url, session.refresh_token)).status).toBe(401);
    const stays = await refresh(pair.b.url, other.refresh_token);
    expect(stays.status).toBe(200);
    // again, and an unknown token: the same answer, nothing learned
    expect((await logout(pair.a.url, session.refresh_token)).status).toBe(204);
    expect((await logout(pair.a.url, 'rt_not-a-token-we-issued')).status).toBe(204);
  });

  it('refuses a malformed sign-out with 422 and the error envelope', async () => {
    for (const body of [{}, { refresh_token: 5 }, { refresh_token: 'short' }]) {
      const res = await request(pair.a.url, '/api/v1/auth/logout', { method: 'POST', body });
      expect(res.status, JSON.stringify(body)).toBe(422);
      expect(res.body.error.code).toBe('validation_failed');
    }
  });
});
