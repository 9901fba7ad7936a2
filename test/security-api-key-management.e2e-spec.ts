import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApp, type TestApp } from './helpers/app.js';
import { createApiKey, createUser } from './helpers/factories.js';
import { client } from './helpers/http.js';

/** A caller authenticated by an API key never exceeds that key when it manages keys. */
describe('API keys managed by an API-key caller', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startApp();
  });
  afterAll(async () => {
    await t.close();
  });

  it('a GUEST key creates no keys, cannot see or revoke its owner’s stronger keys, and can revoke itself', async () => {
    const owner = await createUser(t.url, { role: 'USER' });
    const strong = await createApiKey(owner.client, { role: 'USER' });
    const guest = await createApiKey(owner.client, { role: 'GUEST' });
    const otherGuest = await createApiKey(owner.client, { role: 'GUEST' });
    const byGuest = client(t.url, { apiKey: guest.key });

    for (const body of [{ name: 'minted' }, { name: 'minted', role: 'GUEST' }]) {
      const res = await byGuest.post('/api/v1/api-keys', body);
      expect(res.status, JSON.stringify(res.body)).toBe(403);
      expect(res.body.error.code).toBe('forbidden');
    }
    // the stronger key is invisible to the GUEST key: not listed, 404, not revocable
    const listed = await byGuest.get('/api/v1/api-keys');
    expect(listed.status).toBe(200);
    const ids = (listed.body.data as { id: string; role: string; key?: string }[]).map((k) => k.id);
    expect(ids).toEqual(expect.arrayContaining([guest.id, otherGuest.id]));
    expect(ids).not.toContain(strong.id);
    expect((listed.body.data as { key?: string }[]).every((k) => k.key === undefined)).toBe(true);
    expect((await byGuest.get(`/api/v1/api-keys/${strong.id}`)).status).toBe(404);
    expect((await byGuest.delete(`/api/v1/api-keys/${strong.id}`)).status).toBe(404);
    // another GUEST key: visible, but a GUEST key revokes only itself
    expect((await byGuest.delete(`/api/v1/api-keys/${otherGuest.id}`)).status).toBe(403);
    // the strong key still works
    expect((await client(t.url, { apiKey: strong.key }).get('/api/v1/auth/me')).status).toBe(200);
    expect((await client(t.url, { apiKey: otherGuest.key }).get('/api/v1/auth/me')).status).toBe(
      200,
    );
    // a leaked GUEST key can end itself
    expect((await byGuest.delete(`/api/v1/api-keys/${guest.id}`)).status).toBe(204);
    expect((await byGuest.get('/api/v1/auth/me')).status).toBe(401);
  });

  it('a USER key of an ADMIN creates keys up to USER only, and neither sees nor revokes the ADMIN’s ADMIN keys', async () => {
    const admin = await createUser(t.url, { role: 'ADMIN' });
    const adminKey = await createApiKey(admin.client, { role: 'ADMIN' });
    const userKey = await createApiKey(admin.client, { role: 'USER' });
    const byUserKey = client(t.url, { apiKey: userKey.key });

    const tooHigh = await byUserKey.post('/api/v1/api-keys', { name: 'escalate', role: 'ADMIN' });
    expect(tooHigh.status).toBe(403);
    const made = await byUserKey.post('/api/v1/api-keys', { name: 'child' });
    expect(made.status, JSON.stringify(made.body)).toBe(201);
    expect(made.body.data.role).toBe('USER');
    const guestMade = await byUserKey.post('/api/v1/api-keys', { name: 'child', role: 'GUEST' });
    expect(guestMade.status).toBe(201);

    expect((await byUserKey.get(`/api/v1/api-keys/${adminKey.id}`)).status).toBe(404);
    expect((await byUserKey.delete(`/api/v1/api-keys/${adminKey.id}`)).status).toBe(404);
    const ids = ((await byUserKey.get('/api/v1/api-keys')).body.data as { id: string }[]).map(
      (k) => k.id,
    );
    expect(ids).toContain(userKey.id);
    expect(ids).not.toContain(adminKey.id);
    // at USER level it is not an ADMIN: another user's keys are not its business
    const someone = await createUser(t.url);
    const theirs = await createApiKey(someone.client);
    expect((await byUserKey.get(`/api/v1/api-keys/${theirs.id}`)).status).toBe(404);
    // keys at or below its role are its to revoke
    expect((await byUserKey.delete(`/api/v1/api-keys/${made.body.data.id as string}`)).status).toBe(
      204,
    );
    expect((await client(t.url, { apiKey: adminKey.key }).get('/api/v1/auth/me')).status).toBe(200);
    // the ADMIN's own ADMIN key still manages everything
    const byAdminKey = client(t.url, { apiKey: adminKey.key });
    expect((await byAdminKey.get(`/api/v1/api-keys/${theirs.id}`)).status).toBe(200);
  });

  it('a key made by an expiring key expires with it at the latest', async () => {
    const owner = await createUser(t.url);
    const parentExpiry = new Date(Date.now() + 3_600_000).toISOString();
    const parent = await createApiKey(owner.client, { expires_at: parentExpiry });
    const byParent = client(t.url, { apiKey: parent.key });
    const child = await byParent.post('/api/v1/api-keys', { name: 'child' });
    expect(child.status).toBe(201);
    expect(Date.parse(child.body.data.expires_at as string)).toBe(Date.parse(parentExpiry));
    const later = await byParent.post('/api/v1/api-keys', {
      name: 'outlives',
      expires_at: new Date(Date.now() + 7_200_000).toISOString(),
    });
    expect(later.status).toBe(403);
    const forever = await byParent.post('/api/v1/api-keys', { name: 'forever', expires_at: null });
    expect(forever.status).toBe(201);
    expect(Date.parse(forever.body.data.expires_at as string)).toBe(Date.parse(parentExpiry));
  });

  it('a GUEST user signed in with a password or token still manages their own keys', async () => {
    const guest = await createUser(t.url, { role: 'GUEST' });
    const key = await createApiKey(guest.client);
    expect((await guest.client.get(`/api/v1/api-keys/${key.id}`)).status).toBe(200);
    expect((await guest.client.delete(`/api/v1/api-keys/${key.id}`)).status).toBe(204);
  });
});
