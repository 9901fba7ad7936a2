import createClient from 'openapi-fetch';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApp, type TestApp } from './helpers/app.js';
import { tokenFor, unique } from './helpers/factories.js';
import { ADMIN_EMAIL, ADMIN_PASSWORD } from './helpers/app.js';
import { checkResponse } from './helpers/openapi.js';
import type { components, paths } from './generated/openapi.js';

type User = components['schemas']['User'];

/**
 * The client a frontend would generate: `openapi-typescript` types (test/generated/openapi.d.ts,
 * regenerated from the served document by `npm run openapi:client`) and `openapi-fetch`. If the
 * document drifts from what this test does (a path, a member, a status), `tsc` fails in CI; if the
 * app drifts from the document, the response check below fails.
 */
describe('typed OpenAPI client (openapi-typescript + openapi-fetch)', () => {
  let t: TestApp;
  let api: ReturnType<typeof createClient<paths>>;

  beforeAll(async () => {
    t = await startApp();
    const token = await tokenFor(t.url, ADMIN_EMAIL, ADMIN_PASSWORD);
    api = createClient<paths>({
      baseUrl: t.url,
      headers: { authorization: `Bearer ${token}` },
      // every response is also checked against the served document, like the other helpers do
      fetch: async (req: Request) => {
        const res = await fetch(req);
        await checkResponse(t.url, {
          method: req.method,
          url: req.url,
          status: res.status,
          contentType: res.headers.get('content-type'),
          text: await res.clone().text(),
        });
        return res;
      },
    });
  });
  afterAll(async () => {
    await t.close();
  });

  it('walks the users API: create, get, list, patch, delete, then 404', async () => {
    const email = `${unique()}@example.com`;
    const created = await api.POST('/api/v1/users', {
      body: { name: 'Typed Tess', email, age: 30, password: `pw-${unique()}-long` },
    });
    expect(created.response.status).toBe(201);
    const user: User = created.data!.data;
    expect(user).toMatchObject({ name: 'Typed Tess', email, role: 'USER', age: 30 });
    expect(created.response.headers.get('location')).toMatch(
      new RegExp(`/api/v1/users/${user.id}$`),
    );

    const got = await api.GET('/api/v1/users/{id}', { params: { path: { id: user.id } } });
    expect(got.response.status).toBe(200);
    expect(got.data!.data).toEqual(user);

    const listed = await api.GET('/api/v1/users', {
      params: { query: { sort: '-created_at', limit: 100 } },
    });
    expect(listed.response.status).toBe(200);
    expect(listed.data!.meta.limit).toBe(100);
    expect(listed.data!.data.map((u) => u.id)).toContain(user.id);

    const patched = await api.PATCH('/api/v1/users/{id}', {
      params: { path: { id: user.id } },
      body: { name: 'Tess Typed', age: null },
    });
    expect(patched.response.status).toBe(200);
    expect(patched.data!.data).toMatchObject({ id: user.id, name: 'Tess Typed', age: null });

    const deleted = await api.DELETE('/api/v1/users/{id}', { params: { path: { id: user.id } } });
    expect(deleted.response.status).toBe(204);

    const gone = await api.GET('/api/v1/users/{id}', { params: { path: { id: user.id } } });
    expect(gone.response.status).toBe(404);
    expect(gone.error!.error.code).toBe('not_found');
  });

  it('types the error envelope: 422 names each invalid member', async () => {
    const res = await api.POST('/api/v1/users', {
      body: { name: 'No Email', email: 'not-an-email' },
    });
    expect(res.response.status).toBe(422);
    const error = res.error!.error;
    expect(error.code).toBe('validation_failed');
    expect(error.details?.map((d) => d.field)).toContain('email');
  });
});
