import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApp, type TestApp } from './helpers/app.js';
import { adminClient, createUser, unique, type CreatedUser } from './helpers/factories.js';
import { client, type Client } from './helpers/http.js';
import { authorize, exchangeCode, registerClient, type RegisteredClient } from './helpers/oauth.js';

/** The ids of an NDJSON export, in order. */
function ids(text: string): string[] {
  return text
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => (JSON.parse(line) as { id: string }).id);
}

/**
 * `GET /api/v1/users/export?q=` exports what `GET /api/v1/users?q=` matches, under the list's
 * rules (docs/admin.md "Exports", "User search").
 */
describe('users export with the list search (q)', () => {
  let t: TestApp;
  let admin: Client;
  let tag: string;
  let ada: CreatedUser;
  let adaGuest: CreatedUser;
  let byEmail: CreatedUser;
  let noEmail: Client;
  let withEmail: Client;

  beforeAll(async () => {
    t = await startApp();
    admin = await adminClient(t.url);
    tag = unique('zq');
    ada = await createUser(t.url, { name: `Ada ${tag}` });
    adaGuest = await createUser(t.url, { name: `Ada ${tag}`, role: 'GUEST' });
    await createUser(t.url, { name: `Bob ${tag}` });
    // matches `q=<tag>x` only through its email
    byEmail = await createUser(t.url, { name: 'Carol Other', email: `${tag}x@example.com` });

    const adminUser = await createUser(t.url, { role: 'ADMIN' });
    const partner: RegisteredClient = await registerClient(admin, {
      scopes: ['openid', 'email', 'admin', 'users:read'],
    });
    const tokenFor = async (scope: string) => {
      const { redirect, verifier } = await authorize(t.url, {
        client: partner,
        email: adminUser.email,
        password: adminUser.password,
        scope,
        prompt: 'consent',
      });
      const res = await exchangeCode(
        t.url,
        partner,
        redirect.searchParams.get('code') ?? '',
        verifier,
      );
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      return client(t.url, { bearer: res.body.access_token as string });
    };
    noEmail = await tokenFor('openid admin users:read');
    withEmail = await tokenFor('openid email admin users:read');
  });
  afterAll(async () => {
    await t.close();
  });

  it('exports exactly the users the list search matches, newest first, with the role filter', async () => {
    const list = await admin.get(`/api/v1/users?q=${encodeURIComponent(`ada ${tag}`)}&limit=100`);
    expect(list.status).toBe(200);
    const exported = await admin.get(`/api/v1/users/export?q=${encodeURIComponent(`ada ${tag}`)}`);
    expect(exported.status, exported.text).toBe(200);
    expect(ids(exported.text)).toEqual(list.body.data.map((u: { id: string }) => u.id));
    expect(ids(exported.text)).toEqual([adaGuest.id, ada.id]);

    const guests = await admin.get(
      `/api/v1/users/export?q=${encodeURIComponent(`ada ${tag}`)}&role=GUEST`,
    );
    expect(ids(guests.text)).toEqual([adaGuest.id]);
  });

  it('matches emails for a first-party ADMIN and a token with the email scope, never for a token without it', async () => {
    const path = `/api/v1/users/export?q=${tag}x`;
    expect(ids((await admin.get(path)).text)).toEqual([byEmail.id]);
    expect(ids((await withEmail.get(path)).text)).toEqual([byEmail.id]);
    const hidden = await noEmail.get(path);
    expect(hidden.status).toBe(200);
    expect(ids(hidden.text)).toEqual([]);
  });

  it('refuses an empty q and sort with q (400), naming the member as the list does', async () => {
    const empty = await admin.get('/api/v1/users/export?q=%20');
    expect(empty.status).toBe(400);
    expect(empty.body.error.details).toEqual([
      { field: 'q', message: expect.stringMatching(/^q must hold 1 to \d+ words/) },
    ]);
    const sorted = await admin.get(`/api/v1/users/export?q=${tag}&sort=name`);
    expect(sorted.status).toBe(400);
    expect(sorted.body.error.details).toEqual([
      { field: 'sort', message: 'a search (q) is exported newest first' },
    ]);
  });
});
