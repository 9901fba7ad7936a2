import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApp, type TestApp } from './helpers/app.js';
import { adminClient, createUser, type CreatedUser } from './helpers/factories.js';
import { request, type Client } from './helpers/http.js';
import { gql } from './graphql-client.js';

interface Pair {
  access_token: string;
  refresh_token: string;
}

/**
 * A password change ends every session of that user: refresh tokens at once, and first-party access
 * tokens issued before the change (`iat` has one-second resolution, see docs/data-integrity.md).
 */
describe('a password change ends the existing sessions', () => {
  let t: TestApp;
  let admin: Client;

  beforeAll(async () => {
    t = await startApp();
    admin = await adminClient(t.url);
  });
  afterAll(async () => {
    await t?.close();
  });

  const signIn = async (email: string, password: string) =>
    request(t.url, '/api/v1/auth/token', { method: 'POST', body: { email, password } });
  const me = (access: string) =>
    request(t.url, '/api/v1/auth/me', { headers: { authorization: `Bearer ${access}` } });
  const refresh = (token: string) =>
    request(t.url, '/api/v1/auth/refresh', { method: 'POST', body: { refresh_token: token } });

  /** Two sessions of `user`, issued in a second strictly before the change that follows. */
  async function sessions(user: CreatedUser): Promise<Pair[]> {
    const pairs = [
      (await signIn(user.email, user.password)).body as Pair,
      (await signIn(user.email, user.password)).body as Pair,
    ];
    for (const p of pairs) {
      expect((await me(p.access_token)).status).toBe(200);
    }
    // JWT iat counts whole seconds: let the clock pass into the next second (at most 1 s)
    const issuedIn = Math.floor(Date.now() / 1000);
    while (Math.floor(Date.now() / 1000) === issuedIn) {
      await new Promise((r) => setTimeout(r, 1000 - (Date.now() % 1000) + 5));
    }
    return pairs;
  }

  async function expectEnded(pairs: Pair[]) {
    for (const p of pairs) {
      expect((await me(p.access_token)).status).toBe(401);
      expect((await refresh(p.refresh_token)).status).toBe(401);
    }
  }

  const changes: [string, (user: CreatedUser, password: string) => Promise<number>][] = [
    [
      'REST PATCH by the user',
      async (user, password) =>
        (await user.client.patch(`/api/v1/users/${user.id}`, { password })).status,
    ],
    [
      'REST PUT by an admin',
      async (user, password) =>
        (
          await admin.put(`/api/v1/users/${user.id}`, {
            name: 'Renamed',
            email: user.email,
            password,
          })
        ).status,
    ],
    [
      'GraphQL updateUser by the user',
      async (user, password) => {
        const res = await gql(
          t.url,
          'mutation($id: ID!, $i: UpdateUserInput) { updateUser(id: $id, input: $i) { id } }',
          { auth: { bearer: user.token }, variables: { id: user.id, i: { password } } },
        );
        return res.body.errors ? 400 : 200;
      },
    ],
    [
      'a batch update by an admin',
      async (user, password) =>
        (
          await admin.post('/api/v1/users/batch', {
            operations: [{ op: 'update', id: user.id, data: { password } }],
          })
        ).status,
    ],
  ];

  it.each(changes)(
    'via %s: old tokens stop working, the new password signs in at once',
    async (_, change) => {
      const user = await createUser(t.url);
      const pairs = await sessions(user);
      const newPassword = 'a-brand-new-password-1';
      expect(await change(user, newPassword)).toBe(200);

      await expectEnded(pairs);
      expect((await signIn(user.email, user.password)).status).toBe(401);
      const fresh = await signIn(user.email, newPassword);
      expect(fresh.status).toBe(200);
      // a token issued right after the change (possibly within the same second) works
      expect((await me(fresh.body.access_token)).status).toBe(200);
      expect((await refresh(fresh.body.refresh_token)).status).toBe(200);
    },
  );

  it("leaves sessions alone when other members change, and other users' sessions always", async () => {
    const user = await createUser(t.url);
    const other = await createUser(t.url);
    const pairs = await sessions(user);
    const others = await sessions(other);
    expect(
      (await user.client.patch(`/api/v1/users/${user.id}`, { name: 'Only a name' })).status,
    ).toBe(200);
    expect((await me(pairs[0].access_token)).status).toBe(200);
    expect((await refresh(pairs[0].refresh_token)).status).toBe(200);

    expect(
      (await user.client.patch(`/api/v1/users/${user.id}`, { password: 'another-password-12' }))
        .status,
    ).toBe(200);
    expect((await me(others[0].access_token)).status).toBe(200);
    expect((await refresh(others[1].refresh_token)).status).toBe(200);
  });
});
