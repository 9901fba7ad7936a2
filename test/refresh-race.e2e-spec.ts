import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freshDatabaseUrl, startApp, usingPostgres, type TestApp } from './helpers/app.js';
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

const me = (base: string, access: string) =>
  request(base, '/api/v1/auth/me', { headers: { authorization: `Bearer ${access}` } });

/** 20 concurrent refreshes of one token, spread over the given instances. */
async function race(bases: string[], token: string) {
  return Promise.all(Array.from({ length: 20 }, (_, i) => refresh(bases[i % bases.length], token)));
}

function expectOneWinner(results: Awaited<ReturnType<typeof race>>): Pair {
  const statuses = results.map((r) => r.status).sort();
  expect(statuses.filter((s) => s === 200)).toHaveLength(1);
  expect(statuses.filter((s) => s === 401)).toHaveLength(19);
  for (const r of results.filter((x) => x.status === 401)) {
    expect(r.body.error.code).toBe('unauthorized');
  }
  return results.find((r) => r.status === 200)!.body as Pair;
}

describe('refresh tokens are single-use under concurrency', () => {
  let t: TestApp;
  let user: CreatedUser;

  beforeAll(async () => {
    // without the reuse grace window (REFRESH_REUSE_GRACE_S=0): every second presentation is a replay
    // (test/refresh-grace.e2e-spec.ts covers the window)
    t = await startApp({ REFRESH_REUSE_GRACE_S: '0' });
    user = await createUser(t.url);
  });
  afterAll(async () => {
    await t?.close();
  });

  it('lets exactly one of 20 concurrent refreshes of one token succeed; the others revoke its family', async () => {
    const first = await signIn(t.url, user);
    const other = await signIn(t.url, user); // a second sign-in: another family
    const winner = expectOneWinner(await race([t.url], first.refresh_token));

    // the winner's access token works; its refresh token belonged to the family the 19 replays revoked
    expect((await me(t.url, winner.access_token)).status).toBe(200);
    expect((await refresh(t.url, winner.refresh_token)).status).toBe(401);
    // another sign-in of the same user is not touched
    const otherNext = await refresh(t.url, other.refresh_token);
    expect(otherNext.status).toBe(200);
    expect((await me(t.url, otherNext.body.access_token)).status).toBe(200);
  });

  it("rotates: the new pair works, and a replay of the old token revokes the family's newest token", async () => {
    const first = await signIn(t.url, user);
    const second = await refresh(t.url, first.refresh_token);
    expect(second.status).toBe(200);
    expect((await me(t.url, second.body.access_token)).status).toBe(200);
    const third = await refresh(t.url, second.body.refresh_token);
    expect(third.status).toBe(200);

    expect((await refresh(t.url, first.refresh_token)).status).toBe(401);
    expect((await refresh(t.url, third.body.refresh_token)).status).toBe(401);
  });
});

describe.skipIf(!usingPostgres)(
  usingPostgres
    ? 'refresh tokens are single-use across two instances on one PostgreSQL database'
    : 'refresh race across instances: skipped, needs DATABASE_URL=postgres://… (SQLite has one process)',
  () => {
    let a: TestApp;
    let b: TestApp;
    let user: CreatedUser;

    beforeAll(async () => {
      const env = { DATABASE_URL: freshDatabaseUrl(), REFRESH_REUSE_GRACE_S: '0' };
      a = await startApp(env);
      b = await startApp(env);
      user = await createUser(a.url);
    });
    afterAll(async () => {
      await Promise.all([a?.close(), b?.close()]);
    });

    it('lets exactly one of 20 refreshes split over two instances succeed', async () => {
      for (let round = 0; round < 3; round++) {
        const first = await signIn(a.url, user);
        const winner = expectOneWinner(await race([a.url, b.url], first.refresh_token));
        expect((await me(b.url, winner.access_token)).status).toBe(200);
        expect((await refresh(a.url, winner.refresh_token)).status).toBe(401);
      }
    });
  },
);
