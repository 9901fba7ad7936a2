import { DataSource } from 'typeorm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_EMAIL, ADMIN_PASSWORD, startApp, type TestApp } from './helpers/app.js';
import {
  adminClient,
  createUser,
  tokenFor,
  unique,
  type CreatedUser,
} from './helpers/factories.js';
import { client, request, type Client } from './helpers/http.js';
import { checkResponse } from './helpers/openapi.js';

describe('HTTP rules of the resource API', () => {
  let t: TestApp;
  let admin: Client;
  let user: CreatedUser;

  beforeAll(async () => {
    t = await startApp();
    admin = await adminClient(t.url);
    user = await createUser(t.url);
  });
  afterAll(async () => {
    await t.close();
  });

  /** Every users row, deleted ones included, straight from the database. */
  async function countUsers(): Promise<number> {
    const rows = await t.app
      .get(DataSource)
      .query<{ n: number | string }[]>('SELECT COUNT(*) AS n FROM users');
    return Number(rows[0].n);
  }

  describe('versioning', () => {
    it('redirects an unversioned GET with 301 and keeps the query', async () => {
      const res = await admin.get('/api/users?limit=2&role=USER');
      expect(res.status).toBe(301);
      expect(res.headers.get('location')).toBe('/api/v1/users?limit=2&role=USER');
    });

    it('redirects other methods with 308 (method and body preserved)', async () => {
      const email = `${unique()}@example.com`;
      const res = await admin.post('/api/users', { name: 'x', email });
      expect(res.status).toBe(308);
      expect(res.headers.get('location')).toBe('/api/v1/users');
      // a client that follows the 308 repeats the same method with the same body, and it lands
      const followed = await fetch(`${t.url}/api/users`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${await tokenFor(t.url, ADMIN_EMAIL, ADMIN_PASSWORD)}`,
          'content-type': 'application/json',
        },
        body: JSON.stringify({ name: 'Followed', email }),
        redirect: 'follow',
      });
      await checkResponse(t.url, {
        method: 'POST',
        url: followed.url,
        status: followed.status,
        contentType: followed.headers.get('content-type'),
        text: await followed.clone().text(),
      });
      expect(followed.status).toBe(201);
      expect(followed.url).toBe(`${t.url}/api/v1/users`);
      const created = (await followed.json()) as { data: { name: string; email: string } };
      expect(created.data).toMatchObject({ name: 'Followed', email });
    });

    it.each(['1', 'v1', 'V1'])(
      'serves /api/<path> as v1 with Accept-Version: %s',
      async (version) => {
        const res = await user.client.get(`/api/users/${user.id}`, {
          headers: { 'accept-version': version },
        });
        expect(res.status).toBe(200);
        expect(res.body.data.id).toBe(user.id);
      },
    );

    it('rejects an unknown version and a header that contradicts the path (400 unsupported_version)', async () => {
      const unknown = await admin.get('/api/users', { headers: { 'accept-version': '2' } });
      expect(unknown.status).toBe(400);
      expect(unknown.body.error.code).toBe('unsupported_version');
      const contradicts = await admin.get('/api/v1/users', { headers: { 'accept-version': 'v2' } });
      expect(contradicts.status).toBe(400);
      expect(contradicts.body.error.code).toBe('unsupported_version');
      const pathV2 = await admin.get('/api/v2/users');
      expect(pathV2.status).toBe(400);
      expect(pathV2.body.error.code).toBe('unsupported_version');
      const matching = await admin.get('/api/v1/users', { headers: { 'accept-version': '1' } });
      expect(matching.status).toBe(200);
    });
  });

  describe('content rules', () => {
    it('answers 400 to a body that is not valid JSON and stores nothing', async () => {
      const before = await countUsers();
      const res = await admin.post('/api/v1/users', undefined, {
        rawBody: '{"name": "Broken", "email": ',
        headers: { 'content-type': 'application/json' },
      });
      expect(res.status).toBe(400);
      expect(res.body.error.code).toBe('bad_request');
      expect(await countUsers()).toBe(before);
    });

    it('answers 415 to another Content-Type (text/plain included)', async () => {
      for (const type of ['text/plain', 'application/xml', 'application/x-www-form-urlencoded']) {
        const res = await admin.post('/api/v1/users', undefined, {
          rawBody: 'name=x',
          headers: { 'content-type': type },
        });
        expect(res.status, type).toBe(415);
        expect(res.body.error.code).toBe('unsupported_media_type');
      }
    });

    it('answers 413 to a body over 1 MiB', async () => {
      const res = await admin.post('/api/v1/users', {
        name: 'x',
        email: 'a@example.com',
        pad: 'x'.repeat(1024 * 1024),
      });
      expect(res.status).toBe(413);
      expect(res.body.error.code).toBe('payload_too_large');
    });

    it('answers 406 when Accept excludes JSON, and serves JSON for */*, application/* and +json', async () => {
      const res = await admin.get('/api/v1/users', { headers: { accept: 'text/html' } });
      expect(res.status).toBe(406);
      expect(res.body.error.code).toBe('not_acceptable');
      const zero = await admin.get('/api/v1/users', {
        headers: { accept: 'application/json;q=0, text/html' },
      });
      expect(zero.status).toBe(406);
      for (const accept of [
        '*/*',
        'application/*',
        'application/json',
        'text/html, application/json;q=0.5',
      ]) {
        expect((await admin.get('/api/v1/users', { headers: { accept } })).status, accept).toBe(
          200,
        );
      }
    });

    it('answers 400 (not 500) to a JSON body that is not an object', async () => {
      const res = await admin.post('/api/v1/users', undefined, {
        rawBody: '[1,2]',
        headers: { 'content-type': 'application/json' },
      });
      expect(res.status).toBe(400);
      expect(res.body.error).toMatchObject({
        code: 'bad_request',
        details: [expect.objectContaining({ field: 'body' })],
      });
    });
  });

  describe('errors and ids', () => {
    it('answers unknown routes with the 404 envelope', async () => {
      for (const path of ['/api/v1/nothing-here', '/nothing', '/api/v1/users/x/y/z']) {
        const res = await admin.get(path);
        expect(res.status, path).toBe(404);
        expect(res.body).toEqual({ error: { code: 'not_found', message: expect.any(String) } });
      }
    });

    it('answers 405 with Allow to a method the path does not support', async () => {
      const res = await admin.patch('/api/v1/users', { name: 'x' });
      expect(res.status).toBe(405);
      expect(res.headers.get('allow')).toBe('GET, HEAD, POST, OPTIONS');
      expect(res.body.error.code).toBe('method_not_allowed');
      const graphql = await admin.delete('/graphql');
      expect(graphql.status).toBe(405);
      expect(graphql.headers.get('allow')).toContain('POST');
    });

    it('echoes a well-formed X-Request-Id and replaces a malformed one', async () => {
      const echoed = await admin.get('/api/v1/users', {
        headers: { 'x-request-id': 'req-abc.123' },
      });
      expect(echoed.headers.get('x-request-id')).toBe('req-abc.123');
      const replaced = await admin.get('/api/v1/users', {
        headers: { 'x-request-id': 'bad id with spaces' },
      });
      expect(replaced.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
      const none = await client(t.url).get('/health/live');
      expect(none.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
      const onError = await client(t.url).get('/api/v1/users');
      expect(onError.status).toBe(401);
      expect(onError.headers.get('x-request-id')).toBeTruthy();
    });
  });

  describe('operations endpoints', () => {
    it('reports liveness and readiness (database, and Redis when configured)', async () => {
      const live = await client(t.url).get('/health/live');
      expect(live.status).toBe(200);
      expect(live.body.status).toBe('ok');
      const ready = await client(t.url).get('/health/ready');
      expect(ready.status).toBe(200);
      expect(ready.body.info.database.status).toBe('up');
      if (t.config.redisUrl) {
        expect(ready.body.info.redis.status).toBe('up');
      }
    });

    it('serves Prometheus metrics with request durations', async () => {
      const res = await client(t.url).get('/metrics');
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toContain('text/plain');
      expect(res.text).toContain('atrium_http_request_duration_seconds_bucket');
      expect(res.text).toContain('route="/api/v1/users"');
    });

    it('serves the OpenAPI document and Swagger UI without credentials', async () => {
      const json = await client(t.url).get('/api/docs-json');
      expect(json.status).toBe(200);
      expect(json.body.openapi).toMatch(/^3\./);
      expect(Object.keys(json.body.paths)).toEqual(
        expect.arrayContaining(['/api/v1/users', '/api/v1/users/{id}']),
      );
      const create = json.body.components.schemas.CreateUserInput;
      expect(create.required).toEqual(expect.arrayContaining(['name', 'email']));
      expect(create.properties.role.enum).toEqual(['ADMIN', 'USER', 'GUEST']);
      expect(create.properties.password.writeOnly).toBe(true);
      expect(
        json.body.paths['/api/v1/users'].post.requestBody.content['application/json'].schema.$ref,
      ).toBe('#/components/schemas/CreateUserInput');
      const ui = await request(t.url, '/api/docs', { headers: { accept: 'text/html' } });
      expect(ui.status).toBe(200);
      expect(ui.text).toContain('swagger');
    });
  });
});

describe('readiness when a dependency is down', () => {
  it('answers 503 with the failing check while liveness stays 200 (Redis unreachable)', async () => {
    const t = await startApp({ REDIS_URL: 'redis://127.0.0.1:1' });
    try {
      const ready = await client(t.url).get('/health/ready');
      expect(ready.status).toBe(503);
      expect(ready.body.status).toBe('error');
      expect(ready.body.error.redis.status).toBe('down');
      expect(ready.body.info.database.status).toBe('up');
      expect((await client(t.url).get('/health/live')).status).toBe(200);
    } finally {
      await t.close();
    }
  });

  it('answers 503 when the database is gone', async () => {
    const t = await startApp();
    await t.app.get(DataSource).destroy();
    const ready = await client(t.url).get('/health/ready');
    expect(ready.status).toBe(503);
    expect(ready.body.error.database.status).toBe('down');
    await t.close();
  });
});
