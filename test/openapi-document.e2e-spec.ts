import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ERROR_CODES } from '../src/common/errors.js';
import { startApp, type TestApp } from './helpers/app.js';
import { adminClient } from './helpers/factories.js';
import { request, type Client } from './helpers/http.js';
import { checkResponse } from './helpers/openapi.js';

interface Schema {
  $ref?: string;
  type?: string;
  properties?: Record<string, Schema>;
  required?: string[];
  additionalProperties?: boolean;
  items?: Schema;
  minItems?: number;
  pattern?: string;
  enum?: unknown[];
  allOf?: Schema[];
  oneOf?: Schema[];
}

interface Operation {
  summary?: string;
  tags?: string[];
  parameters?: {
    name: string;
    in: string;
    required?: boolean;
    example?: unknown;
    examples?: unknown;
    schema?: Schema & { example?: unknown };
  }[];
  requestBody?: { content: Record<string, { schema: Schema }> };
  responses: Record<
    string,
    {
      description?: string;
      headers?: Record<string, unknown>;
      content?: Record<string, { schema?: unknown }>;
    }
  >;
}

const USER = {
  id: 'usr_01JD5Z6K3M8Q2W4E6R8T0Y2U4I',
  name: 'Ada',
  email: null,
  role: 'USER',
  age: null,
  created_at: '2026-11-23T18:00:00.000Z',
  updated_at: '2026-11-23T18:00:00.000Z',
};

/** The served document itself, and the response check the whole suite relies on. */
describe('OpenAPI document (/api/docs-json)', () => {
  let t: TestApp;
  let doc: {
    paths: Record<string, Record<string, Operation>>;
    components: { schemas: Record<string, Schema> };
  };
  let admin: Client;

  beforeAll(async () => {
    // a loopback webhook receiver address is accepted (the webhook log is one of the lists)
    t = await startApp({ WEBHOOK_ALLOWED_HOSTS: '127.0.0.1' });
    doc = (await request(t.url, '/api/docs-json')).body;
    admin = await adminClient(t.url);
  });

  /** The schema itself, following a `$ref` (or the single `allOf` nestjs/swagger wraps one in). */
  function resolve(schema: Schema): Schema {
    if (schema.$ref) {
      return resolve(doc.components.schemas[schema.$ref.replace('#/components/schemas/', '')]);
    }
    return schema.allOf?.length === 1 && !schema.properties ? resolve(schema.allOf[0]) : schema;
  }

  /** Every operation with its method, path and a URL for it (path parameters filled in). */
  function operations() {
    return Object.entries(doc.paths).flatMap(([path, item]) =>
      Object.entries(item).map(([method, op]) => ({
        method: method.toUpperCase(),
        path,
        url: path
          .replace(/\{client_id\}/g, 'cli_01JD5Z6K3M8Q2W4E6R8T0Y2U4I')
          .replace(
            /\{id\}/g,
            path.startsWith('/api/v1/users')
              ? 'usr_01JD5Z6K3M8Q2W4E6R8T0Y2U4I'
              : 'x_01JD5Z6K3M8Q2W4E6R8T0Y2U4I',
          ),
        op,
      })),
    );
  }
  afterAll(async () => {
    await t.close();
  });

  it('gives every /api/v1 operation a summary, a tag, a typed success body or 204, and its 4xx answers', () => {
    const problems: string[] = [];
    for (const [path, item] of Object.entries(doc.paths)) {
      for (const [method, op] of Object.entries(item)) {
        if (!path.startsWith('/api/v1/')) {
          continue;
        }
        const name = `${method.toUpperCase()} ${path}`;
        if (!op.summary) {
          problems.push(`${name}: no summary`);
        }
        if (!op.tags?.length) {
          problems.push(`${name}: no tag`);
        }
        const success = Object.keys(op.responses).filter((s) => s.startsWith('2'));
        for (const status of success) {
          const content = op.responses[status]?.content;
          // the exports stream NDJSON or CSV instead of a JSON body
          if (
            status !== '204' &&
            !(content?.['application/json'] ?? content?.['application/x-ndjson'])?.schema
          ) {
            problems.push(`${name}: ${status} has no schema`);
          }
        }
        for (const status of ['400', '406', '429', '500', '503']) {
          if (!op.responses[status]) {
            problems.push(`${name}: ${status} not documented`);
          }
        }
      }
    }
    expect(problems).toEqual([]);
  });

  it('enumerates exactly the error codes of src/common/errors.ts across the error envelopes', () => {
    const codes = new Set<string>();
    for (const [name, schema] of Object.entries(doc.components.schemas)) {
      if (name.endsWith('Error') && schema.properties?.error) {
        const error = schema.properties.error as { properties: { code: { enum: string[] } } };
        error.properties.code.enum.forEach((c) => codes.add(c));
      }
    }
    // every code a REST answer can carry (query_too_complex is GraphQL's, 405 has no operation)
    const rest = ERROR_CODES.filter((c) => c !== 'query_too_complex' && c !== 'method_not_allowed');
    expect([...codes].sort()).toEqual([...rest].sort());
  });

  it('documents the 409 of every idempotent route once: its own conflict, then the key in progress, with Retry-After', () => {
    const inProgress =
      'The same `Idempotency-Key` is still running (`idempotency_key_in_progress`); retry after `Retry-After` seconds.';
    const conflicts: Record<string, string | undefined> = {};
    for (const [path, item] of Object.entries(doc.paths)) {
      for (const [method, op] of Object.entries(item)) {
        if (op.parameters?.some((p) => p.in === 'header' && p.name === 'Idempotency-Key')) {
          const conflict = op.responses['409'];
          expect(conflict?.headers).toHaveProperty('Retry-After');
          conflicts[`${method.toUpperCase()} ${path}`] = conflict?.description;
        }
      }
    }
    expect(conflicts).toMatchObject({
      'POST /api/v1/users': `A live user already has this email (case-insensitive). Or: ${inProgress}`,
      'POST /api/v1/rooms': `A room with this name already exists. Or: ${inProgress}`,
      'POST /api/v1/posts': inProgress,
    });
    for (const description of Object.values(conflicts)) {
      expect(description?.split(inProgress)).toHaveLength(2); // once, at the end
      expect(description?.endsWith(inProgress)).toBe(true);
    }
  });

  it('the response check refuses an undocumented status, naming the operation and the documented ones', async () => {
    await expect(
      checkResponse(t.url, {
        method: 'GET',
        url: `/api/v1/users/${USER.id}`,
        status: 418,
        contentType: 'application/json',
        text: '{}',
      }),
    ).rejects.toThrow(/GET \/api\/v1\/users\/\{id\} answered 418.*documented: 200, 304/);
  });

  it('the response check refuses a member the document does not list, and a wrong type', async () => {
    const check = (data: object) =>
      checkResponse(t.url, {
        method: 'GET',
        url: `/api/v1/users/${USER.id}`,
        status: 200,
        contentType: 'application/json; charset=utf-8',
        text: JSON.stringify({ data }),
      });
    await expect(check(USER)).resolves.toBeUndefined();
    await expect(check({ ...USER, password_hash: 'x' })).rejects.toThrow(
      /\/data must NOT have additional properties "password_hash"/,
    );
    await expect(check({ ...USER, age: '36' })).rejects.toThrow(/\/data\/age must be integer,null/);
  });

  it('the response check holds an error answer to its status’s codes', async () => {
    await expect(
      checkResponse(t.url, {
        method: 'GET',
        url: `/api/v1/users/${USER.id}`,
        status: 404,
        contentType: 'application/json',
        text: JSON.stringify({ error: { code: 'conflict', message: 'x' } }),
      }),
    ).rejects.toThrow(/\/error\/code must be equal to one of the allowed values \["not_found"\]/);
  });
  it('gives no optional parameter an example (Swagger UI would send it from "Try it out")', () => {
    const prefilled = operations().flatMap(({ method, path, op }) =>
      (op.parameters ?? [])
        .filter((p) => !p.required)
        .filter(
          (p) =>
            p.example !== undefined || p.examples !== undefined || p.schema?.example !== undefined,
        )
        .map((p) => `${method} ${path} ${p.in} ${p.name}`),
    );
    expect(prefilled).toEqual([]);
  });

  it('declares If-None-Match and its 304 (no body) on every GET under /api/, and answers it', async () => {
    const gets = operations().filter((o) => o.method === 'GET' && o.path.startsWith('/api/'));
    expect(gets.length).toBeGreaterThanOrEqual(15);
    for (const { path, op } of gets) {
      const param = op.parameters?.find((p) => p.in === 'header' && p.name === 'If-None-Match');
      expect(param, path).toMatchObject({ required: false, schema: { type: 'string' } });
      expect(op.responses['304'], path).toBeDefined();
      expect(op.responses['304']?.content, path).toBeUndefined();
    }
    // a list and a resource, as a client revalidates them
    for (const url of ['/api/v1/users?limit=5', '/api/v1/auth/me']) {
      const first = await admin.get(url);
      expect(first.status).toBe(200);
      const again = await admin.get(url, {
        headers: { 'if-none-match': first.headers.get('etag') ?? '' },
      });
      expect(again.status).toBe(304);
      expect(again.text).toBe('');
    }
  });

  it('closes every request body (additionalProperties: false), and the server refuses an unknown member of each with 422', async () => {
    const bodies = operations().filter((o) => o.op.requestBody);
    expect(bodies.length).toBeGreaterThan(15);
    const open: string[] = [];
    const seen = new Set<Schema>();
    const walk = (schema: Schema, at: string) => {
      const s = resolve(schema);
      if (seen.has(s)) {
        return;
      }
      seen.add(s);
      if (s.properties) {
        if (s.additionalProperties !== false) {
          open.push(at);
        }
        Object.entries(s.properties).forEach(([k, v]) => walk(v, `${at}.${k}`));
      }
      if (s.items) {
        walk(s.items, `${at}[]`);
      }
      s.oneOf?.forEach((v, i) => walk(v, `${at}|${i}`));
    };
    for (const { method, path, url, op } of bodies) {
      walk(op.requestBody!.content['application/json'].schema, `${method} ${path}`);
      const res = await admin[method.toLowerCase() as 'post' | 'put' | 'patch'](url, {
        unexpected_member: 1,
      });
      expect(res.status, `${method} ${path}: ${res.text}`).toBe(422);
      expect(res.body.error.details, `${method} ${path}`).toContainEqual(
        expect.objectContaining({ field: 'unexpected_member' }),
      );
    }
    expect(open).toEqual([]);
    // nested members too: an order item, a batch operation
    const order = await admin.post('/api/v1/users/usr_01JD5Z6K3M8Q2W4E6R8T0Y2U4I/orders', {
      items: [{ sku: 'A-1', quantity: 1, unit_price_cents: 1, colour: 'red' }],
      currency: 'EUR',
    });
    expect(order.status).toBe(422);
    expect(JSON.stringify(order.body.error.details)).toContain('colour');
    const batch = await admin.post('/api/v1/users/batch', {
      operations: [{ op: 'create', data: { name: 'N', email: 'n@example.com' }, extra: 1 }],
    });
    expect(batch.status).toBe(422);
    expect(JSON.stringify(batch.body.error.details)).toContain('extra');
  });

  it('gives minItems of every array a body requires, as the server refuses an empty one (422)', async () => {
    const empties: string[] = [];
    for (const { method, path, url, op } of operations().filter((o) => o.op.requestBody)) {
      const schema = resolve(op.requestBody!.content['application/json'].schema);
      for (const [name, member] of Object.entries(schema.properties ?? {})) {
        const m = resolve(member);
        if (m.type !== 'array') {
          continue;
        }
        empties.push(`${method} ${path} ${name}`);
        expect(m.minItems, `${method} ${path} ${name}`).toBe(1);
        const res = await admin[method.toLowerCase() as 'post' | 'put' | 'patch'](url, {
          [name]: [],
        });
        expect(res.status, `${method} ${path} ${name}`).toBe(422);
        expect(res.body.error.details, `${method} ${path} ${name}`).toContainEqual(
          expect.objectContaining({ field: name }),
        );
      }
    }
    expect(empties.sort()).toEqual([
      'PATCH /api/v1/oauth/clients/{client_id} redirect_uris',
      'PATCH /api/v1/oauth/clients/{client_id} scopes',
      'PATCH /api/v1/webhooks/{id} events',
      'POST /api/v1/oauth/clients redirect_uris',
      'POST /api/v1/oauth/clients scopes',
      'POST /api/v1/users/batch operations',
      'POST /api/v1/users/{id}/orders items',
      'POST /api/v1/webhooks events',
      'PUT /api/v1/graphql/trusted-documents operations',
    ]);
  });

  it('documents `sort` as the pattern of the fields the server sorts by, and `page` up to its maximum', async () => {
    // paged lists (the exports take `sort` too, but no page: test/admin-dashboards.e2e-spec.ts)
    const lists = operations().filter(
      (o) =>
        o.op.parameters?.some((p) => p.name === 'sort') &&
        o.op.parameters.some((p) => p.name === 'page'),
    );
    expect(lists.length).toBeGreaterThanOrEqual(7);
    // the lists of a user (the admin's orders) and of a room are read at real ids
    const me = (await admin.get('/api/v1/auth/me')).body.data.id as string;
    const room = (await admin.post('/api/v1/rooms', { name: `sorted-${Date.now()}` })).body.data
      .id as string;
    const webhook = (
      await admin.post('/api/v1/webhooks', {
        url: 'http://127.0.0.1:9/sorted',
        events: ['post.created'],
      })
    ).body.data.id as string;
    const urls: Record<string, string> = {
      '/api/v1/users/{id}/orders': `/api/v1/users/${me}/orders`,
      '/api/v1/rooms/{id}/messages': `/api/v1/rooms/${room}/messages`,
      '/api/v1/webhooks/{id}/deliveries': `/api/v1/webhooks/${webhook}/deliveries`,
    };
    for (const { path, op } of lists) {
      const url = urls[path] ?? path;
      expect(url, 'a list at an id this test does not know').not.toContain('{');
      const sort = op.parameters!.find((p) => p.name === 'sort')!.schema!;
      const pattern = new RegExp(sort.pattern!);
      // the fields the pattern lists, all of them descending, then ascending: accepted by both
      const fields = /\(([^()]+)\)/.exec(sort.pattern!)![1].split('|');
      const all = fields.map((f) => `-${f}`).join(',');
      expect(pattern.test(all) && pattern.test(fields.join(',')), path).toBe(true);
      const sorted = await admin.get(`${url}?sort=${all}&limit=1`);
      expect(sorted.status, `${path}: ${sorted.text}`).toBe(200);
      // a field it does not list, or one twice: refused by the server; the pattern refuses the first
      expect(pattern.test('nope')).toBe(false);
      expect((await admin.get(`${url}?sort=nope`)).status, path).toBe(400);
      expect((await admin.get(`${url}?sort=${fields[0]},-${fields[0]}`)).status, path).toBe(400);
      const page = op.parameters!.find((p) => p.name === 'page')!.schema as { maximum?: number };
      expect(page.maximum, path).toBe(1_000_000_000);
    }
    const deepest = await admin.get('/api/v1/users?page=1000000000&cursor=abc');
    const beyond = await admin.get('/api/v1/users?page=1000000001&cursor=abc');
    expect(deepest.status === 400 ? JSON.stringify(deepest.body) : '').not.toContain('page');
    expect(beyond.status).toBe(400);
    expect(JSON.stringify(beyond.body.error.details)).toContain('page');
  });

  it('enumerates the ISO 4217 codes the server accepts for an order currency (any case)', async () => {
    const body = resolve(doc.components.schemas.CreateOrderBody);
    const currency = resolve(body.properties!.currency);
    const codes = currency.enum as string[];
    expect(codes.every((c) => /^[A-Z]{3}$/.test(c))).toBe(true);
    expect(codes).toEqual([...new Set(codes)].sort());
    expect(codes).toEqual(expect.arrayContaining(['EUR', 'USD', 'JPY']));
    expect(codes).not.toContain('ABC');
    const user = (await admin.get('/api/v1/auth/me')).body.data.id as string;
    const order = (c: string) =>
      admin.post(`/api/v1/users/${user}/orders`, {
        items: [{ sku: 'A-1', quantity: 1, unit_price_cents: 100 }],
        currency: c,
      });
    for (const code of [codes[0], codes[codes.length - 1], 'jpy']) {
      const accepted = await order(code);
      expect(accepted.status, code).toBe(201);
      expect(accepted.body.data.currency).toBe(code.toUpperCase());
    }
    const unknown = await order('ABC');
    expect(unknown.status).toBe(422);
    expect(unknown.body.error.details).toContainEqual(
      expect.objectContaining({ field: 'currency' }),
    );
  });

  it('documents Idempotency-Key on exactly the routes that replay, with Idempotent-Replayed on their answers', async () => {
    const idempotent = operations()
      .filter((o) =>
        o.op.parameters?.some((p) => p.in === 'header' && p.name === 'Idempotency-Key'),
      )
      .map((o) => `${o.method} ${o.path}`);
    expect(idempotent.sort()).toEqual([
      'POST /api/v1/auth/register',
      'POST /api/v1/posts',
      'POST /api/v1/rooms',
      'POST /api/v1/rooms/{id}/messages',
      'POST /api/v1/users',
      'POST /api/v1/users/batch',
      'POST /api/v1/users/{id}/orders',
      'POST /api/v1/webhooks',
    ]);
    // a replay is the stored first answer: any status below 500 but 429
    for (const { method, path, op } of operations()) {
      for (const [status, response] of Object.entries(op.responses)) {
        const replayable =
          idempotent.includes(`${method} ${path}`) && Number(status) < 500 && status !== '429';
        expect(
          Boolean(response.headers?.['Idempotent-Replayed']),
          `${method} ${path} ${status}`,
        ).toBe(replayable);
      }
    }
    // the first answer does not carry it, its replay does
    const key = `typed-${Date.now()}`;
    const send = () =>
      admin.post(
        '/api/v1/rooms',
        { name: `replayed-${key}` },
        { headers: { 'idempotency-key': key } },
      );
    const first = await send();
    const replay = await send();
    expect([first.status, replay.status]).toEqual([201, 201]);
    expect(first.headers.get('idempotent-replayed')).toBeNull();
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect(replay.body).toEqual(first.body);
  });
});
