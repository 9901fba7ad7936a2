import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ERROR_CODES } from '../src/common/errors.js';
import { startApp, type TestApp } from './helpers/app.js';
import { request } from './helpers/http.js';
import { checkResponse } from './helpers/openapi.js';

interface Operation {
  summary?: string;
  tags?: string[];
  parameters?: { name: string; in: string }[];
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
    components: { schemas: Record<string, { properties?: Record<string, { enum?: string[] }> }> };
  };

  beforeAll(async () => {
    t = await startApp();
    doc = (await request(t.url, '/api/docs-json')).body;
  });
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
          if (status !== '204' && !op.responses[status]?.content?.['application/json']?.schema) {
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
});
