import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApp, type TestApp } from './helpers/app.js';
import { adminClient, unique } from './helpers/factories.js';
import type { Client } from './helpers/http.js';
import { request } from './helpers/http.js';

const run = promisify(execFile);

type Schema = Record<string, unknown>;
interface Doc {
  paths: Record<
    string,
    Record<string, { requestBody?: { content?: Record<string, { schema?: Schema }> } }>
  >;
  components: { schemas: Record<string, Schema> };
}

/** `where: member` of every property with a `default` in a request body's schema (refs followed). */
function defaultsIn(
  doc: Doc,
  schema: Schema | undefined,
  where: string,
  seen = new Set<string>(),
): string[] {
  if (!schema || typeof schema !== 'object') {
    return [];
  }
  const ref = schema.$ref as string | undefined;
  if (ref) {
    const name = ref.replace('#/components/schemas/', '');
    if (seen.has(name)) {
      return [];
    }
    seen.add(name);
    return defaultsIn(doc, doc.components.schemas[name], name, seen);
  }
  const found: string[] = [];
  for (const [key, value] of Object.entries(schema.properties ?? {}) as [string, Schema][]) {
    if ('default' in value) {
      found.push(`${where}.${key} (default ${JSON.stringify(value.default)})`);
    }
    found.push(...defaultsIn(doc, value, `${where}.${key}`, seen));
  }
  for (const key of ['items', 'additionalProperties'] as const) {
    if (schema[key] && typeof schema[key] === 'object') {
      found.push(...defaultsIn(doc, schema[key] as Schema, where, seen));
    }
  }
  for (const key of ['oneOf', 'anyOf', 'allOf'] as const) {
    for (const part of (schema[key] as Schema[] | undefined) ?? []) {
      found.push(...defaultsIn(doc, part, where, seen));
    }
  }
  return found;
}

/**
 * openapi-typescript's default options turn a member with a `default` into a required one, and a
 * form builder fills it in: a request body must not declare a default at all (docs/openapi.md).
 */
describe('OpenAPI request bodies and the clients generated with default options', () => {
  let t: TestApp;
  let doc: Doc;
  let served: string;
  let admin: Client;

  beforeAll(async () => {
    t = await startApp();
    const res = await request(t.url, '/api/docs-json');
    doc = res.body as Doc;
    served = res.text;
    admin = await adminClient(t.url);
  });
  afterAll(async () => {
    await t.close();
  });

  it('no request-body property of the served document declares a default', () => {
    const found = Object.entries(doc.paths).flatMap(([path, item]) =>
      Object.entries(item).flatMap(([method, op]) =>
        Object.values(op?.requestBody?.content ?? {}).flatMap((media) =>
          defaultsIn(doc, media.schema, `${method.toUpperCase()} ${path}`),
        ),
      ),
    );
    expect(found).toEqual([]);
  });

  it('README and docs TypeScript blocks compile against types generated with openapi-typescript default options', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'atrium-defaults-'));
    try {
      writeFileSync(join(dir, 'openapi.json'), served);
      const result = await run(
        process.execPath,
        ['scripts/check-doc-snippets.mjs', '--openapi', join(dir, 'openapi.json')],
        { encoding: 'utf8' },
      ).catch((err: { stdout?: string; stderr?: string }) => ({
        stdout: err.stdout ?? '',
        stderr: `${err.stderr ?? ''}\n(exit non-zero)`,
      }));
      expect(result.stderr.trim()).toBe('');
      expect(result.stdout).toMatch(/TypeScript blocks type-check/);
      expect(result.stdout).toContain('README.md');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 180_000);

  it('the documented omissions: POST without role makes a USER, PUT without role keeps the current role', async () => {
    const email = `${unique()}@example.com`;
    const created = await admin.post('/api/v1/users', { name: 'Guest', email, role: 'GUEST' });
    expect(created.status).toBe(201);
    const put = await admin.put(`/api/v1/users/${created.body.data.id}`, {
      name: 'Guest 2',
      email,
    });
    expect(put.status).toBe(200);
    expect(put.body.data.role).toBe('GUEST');

    const plain = await admin.post('/api/v1/users', {
      name: 'Plain',
      email: `${unique()}@example.com`,
    });
    expect(plain.status).toBe(201);
    expect(plain.body.data.role).toBe('USER');
    const role = (id: string) => doc.components.schemas[id]?.properties as Record<string, Schema>;
    expect(role('CreateUserInput').role.description).toMatch(/Omitted: the new user is a USER/);
    expect(role('ReplaceUserInput').role.description).toMatch(/Omitted: the current role is kept/);
  });
});
