import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApp, type TestApp } from './helpers/app.js';
import { adminClient, createApiKey, createUser, unique } from './helpers/factories.js';
import { request, type Client } from './helpers/http.js';
import { registerClient } from './helpers/oauth.js';

const WRITES = ['put', 'post', 'patch', 'delete'];
const METHODS = ['get', ...WRITES];

interface Parameter {
  name: string;
  in: string;
  schema?: { enum?: string[]; default?: unknown; example?: unknown; pattern?: string };
}
type Operation = { parameters?: Parameter[]; security?: object[] };

const unknownParam = (name: string) => ({
  error: {
    code: 'bad_request',
    message: expect.stringContaining(name),
    details: [{ field: name, message: 'unknown query parameter' }],
  },
});

/** docs/contract.md section 5: a query parameter a route does not document is refused. */
describe('query parameters a route does not document', () => {
  let t: TestApp;
  let admin: Client;
  let adminKey: string;
  let doc: { paths: Record<string, Record<string, Operation>> };
  /** Real ids for the path parameters of reads, by the template's resource. */
  const ids: Record<string, string> = {};
  let messageId: string;

  beforeAll(async () => {
    // webhook endpoints on a loopback port nobody listens on (their deliveries fail and wait)
    t = await startApp({ WEBHOOK_ALLOWED_HOSTS: '127.0.0.1' });
    admin = await adminClient(t.url);
    adminKey = (await createApiKey(admin)).key;
    // two of everything, so that every list (with the filters below) has a second page
    const alice = await createUser(t.url);
    await createUser(t.url);
    ids.users = alice.id;
    for (const _ of [1, 2]) {
      const order = await admin.post(`/api/v1/users/${alice.id}/orders`, {
        items: [{ sku: 'BOOK-1', quantity: 1, unit_price_cents: 100 }],
        currency: 'EUR',
      });
      ids.orders = order.body.data.id;
      ids.posts = (
        await alice.client.post('/api/v1/posts', { title: 'T', body: 'B' })
      ).body.data.id;
      ids.rooms = (await admin.post('/api/v1/rooms', { name: unique('room') })).body.data.id;
      ids.oauth = (await registerClient(admin)).client_id;
    }
    for (const content of ['one', 'two', 'three']) {
      const sent = await admin.post(`/api/v1/rooms/${ids.rooms}/messages`, { content });
      expect(sent.status).toBe(201);
      messageId ??= sent.body.data.id;
    }
    ids['api-keys'] = (await createApiKey(admin)).id;
    for (const _ of [1, 2]) {
      const hook = await admin.post('/api/v1/webhooks', {
        url: 'http://127.0.0.1:9/hook',
        events: ['user.deleted'],
      });
      expect(hook.status, hook.text).toBe(201);
      ids.webhooks = hook.body.data.id;
    }
    for (const _ of [1, 2]) {
      expect((await admin.post(`/api/v1/webhooks/${ids.webhooks}/ping`, {})).status).toBe(202);
    }
    expect(Object.values(ids).every(Boolean)).toBe(true);
    doc = (await request(t.url, '/api/docs-json')).body;
  });
  afterAll(async () => {
    await t?.close();
  });

  /** Every REST operation of the document, path parameters filled in (reads: real ids). */
  function operations() {
    const ops: { method: string; template: string; path: string; op: Operation }[] = [];
    for (const [template, item] of Object.entries(doc.paths)) {
      if (!template.startsWith('/api/')) {
        continue;
      }
      for (const method of METHODS) {
        const op = item[method];
        if (!op) {
          continue;
        }
        const path = template.replace(/\{([^}]+)\}/g, (_, name: string) => {
          if (method !== 'get') {
            return name === 'client_id' ? 'cli_00000000000000000000000000' : 'nope';
          }
          const resource = template.split('/')[3];
          const id = ids[resource];
          if (!id) {
            throw new Error(`no id for ${template}: add one to this test`);
          }
          return id;
        });
        ops.push({ method, template, path, op });
      }
    }
    return ops;
  }

  /** Filter values that match two rows of this test (for a cursor to have a next page). */
  const FILTER_VALUES: Record<string, string> = { role: 'USER', status: 'pending' };

  /** A valid value for each documented query parameter of a read (real cursors and ids). */
  async function documentedQuery(path: string, op: Operation): Promise<URLSearchParams> {
    const query = new URLSearchParams();
    const names = (op.parameters ?? []).filter((p) => p.in === 'query').map((p) => p.name);
    for (const p of op.parameters ?? []) {
      if (p.in !== 'query' || p.name === 'cursor') {
        continue;
      }
      const s = p.schema ?? {};
      // null: left out (a search, or a filter that would leave a single row)
      const known: Record<string, string | null | undefined> = {
        ...FILTER_VALUES,
        after: messageId,
        author_id: ids.users,
        user_id: ids.users,
        sort: s.pattern && !s.pattern.includes('created_at') ? 'at' : 'created_at',
        limit: '1',
        created_after: '2000-01-01T00:00:00Z',
        created_before: '2100-01-01T00:00:00Z',
        since: '2000-01-01T00:00:00Z',
        until: '2100-01-01T00:00:00Z',
        min_total_cents: '0',
        max_total_cents: '1000000',
        q: null,
        actor_id: null,
        target_id: null,
      };
      const value = known[p.name];
      if (value === null) {
        continue;
      }
      query.set(p.name, value ?? String(s.enum?.[0] ?? s.default ?? s.example));
    }
    if (names.includes('cursor')) {
      // the cursor of this very list, sort and filters: the next link of its first page
      const first = await admin.get(`${path}?${query.toString()}`);
      const next = /<([^>]+)>; rel="next"/.exec(first.headers.get('link') ?? '')?.[1];
      expect(next, `${path}: a next page`).toBeDefined();
      query.set('cursor', new URL(next!).searchParams.get('cursor')!);
    }
    return query;
  }

  it('every operation refuses an unknown parameter with 400 naming it (and does nothing)', async () => {
    const ops = operations();
    expect(ops.length).toBeGreaterThan(30);
    const wrong: string[] = [];
    for (const { method, template, path } of ops) {
      const name = `zz_${method}`;
      const res = await request(t.url, `${path}?${name}=1`, {
        method: method.toUpperCase(),
        auth: { apiKey: adminKey },
        ...(['post', 'put', 'patch'].includes(method) ? { body: {} } : {}),
      });
      if (res.status !== 400) {
        wrong.push(`${method.toUpperCase()} ${template}: ${res.status} ${res.text.slice(0, 120)}`);
        continue;
      }
      expect(res.body, `${method} ${template}`).toEqual(unknownParam(name));
      if (method === 'get') {
        const head = await request(t.url, `${path}?${name}=1`, {
          method: 'HEAD',
          auth: { apiKey: adminKey },
        });
        expect(head.status, `HEAD ${template}`).toBe(400);
      }
    }
    expect(wrong).toEqual([]);
  });

  it('every operation accepts its documented parameters and api_key, which the document lists', async () => {
    const wrong: string[] = [];
    for (const { method, template, path, op } of operations()) {
      const query = method === 'get' ? await documentedQuery(path, op) : new URLSearchParams();
      query.set('api_key', adminKey);
      const res = await request(t.url, `${path}?${query.toString()}`, {
        method: method.toUpperCase(),
        ...(['post', 'put', 'patch'].includes(method) ? { body: {} } : {}),
      });
      // reads get their real resource; writes (bogus ids, empty bodies) get past the query check
      const ok = method === 'get' ? res.status === 200 : ![400, 401].includes(res.status);
      if (!ok) {
        wrong.push(
          `${method.toUpperCase()} ${template}?${[...query.keys()].join('&')}: ${res.status} ${res.text.slice(0, 160)}`,
        );
      }
      const public_ = Array.isArray(op.security) && op.security.length === 0;
      if (!public_) {
        // the query key is documented as a security scheme of every protected operation
        expect(op.security, template).toContainEqual({ api_key_query: [] });
      }
    }
    expect(wrong).toEqual([]);
    const schemes = (await request(t.url, '/api/docs-json')).body.components.securitySchemes;
    expect(schemes.api_key_query).toMatchObject({ type: 'apiKey', in: 'query', name: 'api_key' });
  });

  it('refuses ?email= on the users list instead of answering the unfiltered list', async () => {
    const res = await admin.get(`/api/v1/users?email=${encodeURIComponent('x@example.com')}`);
    expect(res.status).toBe(400);
    expect(res.body).toEqual({
      error: {
        code: 'bad_request',
        message: 'Unknown query parameters: email',
        details: [{ field: 'email', message: 'unknown query parameter' }],
      },
    });
    expect(res.headers.get('ratelimit-remaining')).not.toBeNull(); // counted like any request
    // several at once, each named; documented ones among them are not
    const several = await admin.get('/api/v1/users?limit=2&email=x&Role=ADMIN');
    expect(several.status).toBe(400);
    expect(several.body.error.details).toEqual([
      { field: 'email', message: 'unknown query parameter' },
      { field: 'Role', message: 'unknown query parameter' },
    ]);
  });

  it('refuses a repeated parameter, documented or api_key, naming it', async () => {
    const res = await admin.get('/api/v1/users?limit=1&limit=2');
    expect(res.status).toBe(400);
    expect(res.body).toEqual({
      error: {
        code: 'bad_request',
        message: 'Repeated query parameters: limit',
        details: [{ field: 'limit', message: 'limit is given more than once' }],
      },
    });
    const key = await request(t.url, `/api/v1/auth/me?api_key=${adminKey}&api_key=${adminKey}`);
    // (a repeated key is no credential: the guard refuses it before the query check)
    expect(key.status).toBe(401);
    const withHeader = await admin.get(`/api/v1/auth/me?api_key=a&api_key=b`);
    expect(withHeader.status).toBe(400);
    expect(withHeader.body.error.details).toEqual([
      { field: 'api_key', message: 'api_key is given more than once' },
    ]);
  });

  it('a refused write changes nothing', async () => {
    const title = unique('never');
    const res = await admin.post('/api/v1/posts?draft=true', { title, body: 'B' });
    expect(res.status).toBe(400);
    expect(res.body).toEqual(unknownParam('draft'));
    const mine = await admin.get(`/api/v1/posts?limit=100&sort=-created_at`);
    expect(mine.status).toBe(200);
    expect(mine.body.data.map((p: { title: string }) => p.title)).not.toContain(title);
    const before = (await admin.get(`/api/v1/users/${ids.users}`)).body.data;
    const patched = await admin.patch(`/api/v1/users/${ids.users}?notify=1`, { name: 'Changed' });
    expect(patched.status).toBe(400);
    expect((await admin.get(`/api/v1/users/${ids.users}`)).body.data).toEqual(before);
  });

  it('public routes take api_key (ignored) but nothing else undocumented', async () => {
    const body = { email: 'admin@atrium.test', password: 'admin-password-123' };
    const withKey = await request(t.url, '/api/v1/auth/token?api_key=anything', {
      method: 'POST',
      body,
    });
    expect(withKey.status).toBe(200);
    const other = await request(t.url, '/api/v1/auth/token?grant_type=password', {
      method: 'POST',
      body,
    });
    expect(other.status).toBe(400);
    expect(other.body).toEqual(unknownParam('grant_type'));
  });

  it('unversioned URLs: the redirect keeps the query, the v1 route refuses it', async () => {
    const redirect = await admin.get('/api/users?email=x');
    expect(redirect.status).toBe(301);
    expect(redirect.headers.get('location')).toBe('/api/v1/users?email=x');
    const served = await admin.get('/api/users?email=x', { headers: { 'accept-version': '1' } });
    expect(served.status).toBe(400);
    expect(served.body).toEqual(unknownParam('email'));
  });

  it('OPTIONS (Allow, CORS preflight) describes the path and ignores the query', async () => {
    const res = await admin.options('/api/v1/users?email=x');
    expect(res.status).toBe(200);
    expect(res.headers.get('allow')).toContain('GET');
  });
});
