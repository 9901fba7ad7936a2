import { DataSource } from 'typeorm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApp, type TestApp } from './helpers/app.js';
import { adminClient, createUser, type CreatedUser } from './helpers/factories.js';
import { request, type Client } from './helpers/http.js';
import { authorize, exchangeCode, registerClient, tokenRequest } from './helpers/oauth.js';

describe('OAuth client registry (/api/v1/oauth/clients)', () => {
  let t: TestApp;
  let admin: Client;
  let user: CreatedUser;

  beforeAll(async () => {
    t = await startApp();
    admin = await adminClient(t.url);
    user = await createUser(t.url);
  });
  afterAll(() => t?.close());

  it('registers a confidential client and shows its secret once', async () => {
    const res = await admin.post('/api/v1/oauth/clients', {
      name: '  Acme  ',
      redirect_uris: ['https://acme.example/cb', 'http://127.0.0.1:9000/cb'],
      scopes: ['openid', 'users:read'],
    });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    const c = res.body.data;
    expect(c).toMatchObject({
      name: 'Acme',
      redirect_uris: ['https://acme.example/cb', 'http://127.0.0.1:9000/cb'],
      scopes: ['openid', 'users:read'],
      public: false,
    });
    expect(c.client_id).toMatch(/^cli_[0-9A-Z]{26}$/);
    expect(c.client_secret).toMatch(/^acs_.{40,}$/);
    expect(res.headers.get('location')).toMatch(
      new RegExp(`/api/v1/oauth/clients/${c.client_id}$`),
    );
    expect(res.headers.get('cache-control')).toBe('no-store');

    const got = await admin.get(`/api/v1/oauth/clients/${c.client_id}`);
    expect(got.status).toBe(200);
    expect(got.body.data).not.toHaveProperty('client_secret');
    expect(got.body.data.client_id).toBe(c.client_id);
    const list = await admin.get('/api/v1/oauth/clients?limit=100');
    expect(list.status).toBe(200);
    expect(list.body.meta.total).toBeGreaterThanOrEqual(1);
    const listed = list.body.data.find((x: { client_id: string }) => x.client_id === c.client_id);
    expect(listed).toBeDefined();
    expect(listed).not.toHaveProperty('client_secret');
  });

  it('registers a public client without a secret', async () => {
    const res = await admin.post('/api/v1/oauth/clients', {
      name: 'SPA',
      redirect_uris: ['http://[::1]:5173/cb'],
      scopes: ['openid'],
      public: true,
    });
    expect(res.status).toBe(201);
    expect(res.body.data.public).toBe(true);
    expect(res.body.data).not.toHaveProperty('client_secret');
  });

  it.each([
    ['a relative URI', '/callback', 'redirect_uris.0'],
    ['plain http on a public host', 'http://acme.example/cb', 'redirect_uris.0'],
    ['a fragment', 'https://acme.example/cb#frag', 'redirect_uris.0'],
    ['a custom scheme', 'com.acme:/cb', 'redirect_uris.0'],
  ])('answers 422 for a redirect URI with %s', async (_label, uri, field) => {
    const res = await admin.post('/api/v1/oauth/clients', {
      name: 'Bad',
      redirect_uris: [uri],
      scopes: ['openid'],
    });
    expect(res.status).toBe(422);
    expect(res.body.error.code).toBe('validation_failed');
    expect(res.body.error.details).toEqual([expect.objectContaining({ field })]);
  });

  it('answers 422 with details for unknown scopes, missing members and unknown members', async () => {
    const res = await admin.post('/api/v1/oauth/clients', {
      redirect_uris: [],
      scopes: ['openid', 'admin:everything'],
      grant_types: ['password'],
    });
    expect(res.status).toBe(422);
    const fields = res.body.error.details.map((d: { field: string }) => d.field);
    expect(fields).toEqual(
      expect.arrayContaining(['name', 'redirect_uris', 'scopes', 'grant_types']),
    );
  });

  it('is for ADMINs only: 403 for a USER, 401 anonymous', async () => {
    expect((await user.client.get('/api/v1/oauth/clients')).status).toBe(403);
    const post = await user.client.post('/api/v1/oauth/clients', {
      name: 'x',
      redirect_uris: ['https://x.example/cb'],
      scopes: ['openid'],
    });
    expect(post.status).toBe(403);
    const anon = await request(t.url, '/api/v1/oauth/clients');
    expect(anon.status).toBe(401);
    expect(anon.body.error.code).toBe('unauthorized');
  });

  it('answers 404 for an unknown client and 204 (idempotent) on delete', async () => {
    expect((await admin.get('/api/v1/oauth/clients/cli_nope')).status).toBe(404);
    const c = await registerClient(admin);
    expect((await admin.delete(`/api/v1/oauth/clients/${c.client_id}`)).status).toBe(204);
    expect((await admin.get(`/api/v1/oauth/clients/${c.client_id}`)).status).toBe(404);
    expect((await admin.delete(`/api/v1/oauth/clients/${c.client_id}`)).status).toBe(204);
  });

  it('deleting a client revokes what it holds: refresh fails, the client no longer authenticates', async () => {
    const c = await registerClient(admin);
    const { redirect, verifier } = await authorize(t.url, {
      client: c,
      email: user.email,
      password: user.password,
      scope: 'openid offline_access users:read',
      prompt: 'consent',
    });
    const tokens = await exchangeCode(t.url, c, redirect.searchParams.get('code')!, verifier);
    expect(tokens.status).toBe(200);
    const ds = t.app.get(DataSource);
    const count = async () =>
      Number(
        (
          await ds.query(
            `SELECT COUNT(*) AS n FROM oauth_artifacts WHERE client_id = '${c.client_id}'`,
          )
        )[0].n,
      );
    expect(await count()).toBeGreaterThan(0);
    expect((await admin.delete(`/api/v1/oauth/clients/${c.client_id}`)).status).toBe(204);
    expect(await count()).toBe(0);
    const refresh = await tokenRequest(t.url, c, {
      grant_type: 'refresh_token',
      refresh_token: tokens.body.refresh_token,
    });
    expect(refresh.status).toBe(401);
    expect(refresh.body.error).toBe('invalid_client');
  });

  it('is described in the OpenAPI document', async () => {
    const doc = await request(t.url, '/api/docs-json');
    expect(doc.status).toBe(200);
    expect(Object.keys(doc.body.paths)).toEqual(
      expect.arrayContaining(['/api/v1/oauth/clients', '/api/v1/oauth/clients/{client_id}']),
    );
    expect(doc.body.paths['/api/v1/oauth/clients'].post.requestBody).toBeDefined();
    // each route's declaration is its security requirement: the door's schemes, its scopes in oauth2
    const flow = doc.body.components.securitySchemes.oauth2.flows.authorizationCode;
    expect(flow.tokenUrl).toMatch(/\/oauth\/token$/);
    expect(flow.scopes['orders:write']).toBe('Place and cancel orders for you');
    expect(doc.body.paths['/api/v1/users/{id}'].get.security).toEqual([
      { bearer: [] },
      { oauth2: ['users:read'] },
      { basic: [] },
      { api_key: [] },
      { api_key_query: [] },
    ]);
    expect(doc.body.paths['/api/v1/users/{id}/orders'].post.security).toContainEqual({
      oauth2: ['orders:write'],
    });
    // not for partner apps: no oauth2 requirement; public: none at all
    expect(doc.body.paths['/api/v1/api-keys'].post.security).toEqual([
      { bearer: [] },
      { basic: [] },
      { api_key: [] },
      { api_key_query: [] },
    ]);
    expect(doc.body.paths['/api/v1/auth/token'].post.security).toEqual([]);
    expect(doc.body.paths['/api/v1/auth/token'].post['x-atrium-public']).toBeUndefined();
  });
});
