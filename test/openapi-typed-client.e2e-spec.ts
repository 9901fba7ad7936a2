import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import createClient from 'openapi-fetch';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_EMAIL, ADMIN_PASSWORD, startApp, type TestApp } from './helpers/app.js';
import { tokenFor } from './helpers/factories.js';
import { request } from './helpers/http.js';
import { authorize, exchangeCode } from './helpers/oauth.js';
import { checkResponse } from './helpers/openapi.js';
import type { paths } from './generated/openapi.js';
import { runProgram, type Call } from './typed-client/program.js';

const run = promisify(execFile);
const PROGRAM = 'test/typed-client/program.ts';
const METHODS = ['get', 'put', 'post', 'delete', 'patch'];

/** `METHOD /path` of every operation of the served document. */
function operationsOf(doc: { paths: Record<string, Record<string, unknown>> }): string[] {
  return Object.entries(doc.paths).flatMap(([path, item]) =>
    Object.keys(item)
      .filter((m) => METHODS.includes(m))
      .map((m) => `${m.toUpperCase()} ${path}`),
  );
}

/** A fetch that checks every answer against the served document, as the other helpers do. */
function checkedFetch(base: string) {
  return async (req: Request): Promise<Response> => {
    const res = await fetch(req);
    await checkResponse(base, {
      method: req.method,
      url: req.url,
      status: res.status,
      contentType: res.headers.get('content-type'),
      text: await res.clone().text(),
    });
    return res;
  };
}

/**
 * The client a frontend would generate: `openapi-typescript` types (test/generated/openapi.d.ts,
 * regenerated from the served document by `npm run openapi:client`) and `openapi-fetch`. The
 * program (test/typed-client/program.ts) makes the typical call of every operation; it must compile
 * with `tsc --strict` without casts, and every answer it gets is checked against the document.
 */
describe('typed OpenAPI client (openapi-typescript + openapi-fetch)', () => {
  let t: TestApp;
  let doc: { paths: Record<string, Record<string, unknown>> };
  let served: string;

  beforeAll(async () => {
    // the program registers a webhook endpoint on a loopback port (its deliveries fail and wait)
    t = await startApp({ WEBHOOK_ALLOWED_HOSTS: '127.0.0.1' });
    const res = await request(t.url, '/api/docs-json');
    doc = res.body;
    served = res.text;
  });
  afterAll(async () => {
    await t.close();
  });

  it('the committed types are those of the served document (npm run openapi:types)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'atrium-openapi-'));
    try {
      writeFileSync(join(dir, 'openapi.json'), served);
      const out = join(dir, 'openapi.d.ts');
      await run(process.execPath, [
        'node_modules/openapi-typescript/bin/cli.js',
        join(dir, 'openapi.json'),
        '--default-non-nullable=false',
        '-o',
        out,
      ]);
      await run(process.execPath, [
        'node_modules/prettier/bin/prettier.cjs',
        '--config',
        '.prettierrc',
        '--write',
        '--log-level',
        'warn',
        out,
      ]);
      expect(readFileSync(out, 'utf8')).toBe(readFileSync('test/generated/openapi.d.ts', 'utf8'));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);

  it('compiles the program with tsc --strict (no cast, no non-null assertion, no any, no @ts- comment)', async () => {
    const source = readFileSync(PROGRAM, 'utf8');
    const code = source.replace(/\/\*[\s\S]*?\*\/|\/\/.*$/gm, ''); // comments may say anything
    expect(code).not.toMatch(/\bas\s+(?!const\b)[A-Za-z_{([]/); // `x as T`
    expect(code).not.toMatch(/(?:[=(,:?]|\breturn)\s*<[\w.[\]'" |]+>\s*[\w([]/); // `<T>x`
    expect(code).not.toMatch(/[\w)\]]!(?=[.[;,)\s])/); // non-null assertion `x!`
    expect(code).not.toMatch(/\bany\b/);
    expect(source).not.toMatch(/@ts-(expect-error|ignore|nocheck)|eslint-disable/);
    const tsc = await run(process.execPath, [
      'node_modules/typescript/bin/tsc',
      '-p',
      'test/typed-client/tsconfig.json',
      '--strict',
      '--noEmit',
    ]).catch((err: Error & { stdout?: string; stderr?: string }) => ({
      stdout: `${err.stdout ?? ''}${err.stderr ?? ''}` || err.message,
      stderr: '',
    }));
    expect(`${tsc.stdout}${tsc.stderr}`).toBe('');
  }, 120_000);

  it('the program has a call of every operation of the document, and none of another', () => {
    const source = readFileSync(PROGRAM, 'utf8');
    const called = new Set(
      [...source.matchAll(/\.(GET|PUT|POST|DELETE|PATCH)\(\s*'([^']+)'/g)].map(
        ([, method, path]) => `${method} ${path}`,
      ),
    );
    expect([...called].sort()).toEqual(operationsOf(doc).sort());
  });

  it('runs the program against the app: every operation answers its success, and every answer is documented', async () => {
    const result = await runProgram({
      baseUrl: t.url,
      fetch: checkedFetch(t.url),
      admin: { email: ADMIN_EMAIL, password: ADMIN_PASSWORD },
      webhookUrl: 'http://127.0.0.1:9/hook',
      authorizeApp: async (client) => {
        const { redirect, verifier } = await authorize(t.url, {
          client,
          email: ADMIN_EMAIL,
          password: ADMIN_PASSWORD,
          scope: 'openid users:read',
        });
        const code = redirect.searchParams.get('code') ?? '';
        expect((await exchangeCode(t.url, client, code, verifier)).status).toBe(200);
      },
    });
    const answered = new Map<string, number[]>();
    for (const c of result.calls) {
      const key = `${c.method} ${c.path}`;
      answered.set(key, [...(answered.get(key) ?? []), c.status]);
    }
    // every operation was called, each answer a success (or the 304 of a conditional GET)
    expect([...answered.keys()].sort()).toEqual(operationsOf(doc).sort());
    const failures = result.calls.filter(
      (c: Call) => !((c.status >= 200 && c.status < 300) || c.status === 304),
    );
    expect(failures).toEqual([]);
    expect(answered.get('GET /api/v1/auth/me')).toEqual([200, 304]);
    // the typed values are the real ones
    expect(result.user).toMatchObject({ name: 'Tess Typed', age: null, role: 'USER' });
    expect(result.order).toMatchObject({ status: 'paid', currency: 'EUR', total_cents: 2800 });
    expect(result.message.content).toBe('Hello from a typed client');
    expect(result.post.title).toBe('Typed notes, final');
    expect(result.batch.map((r) => [r.op, r.status, r.data.age])).toEqual([
      ['create', 201, null],
      ['update', 200, 41],
    ]);
    expect(result.grants.map((g) => g.client_name)).toContain('Typed partner');
  });

  it('types the error envelope: 422 names each invalid member', async () => {
    const token = await tokenFor(t.url, ADMIN_EMAIL, ADMIN_PASSWORD);
    const api = createClient<paths>({
      baseUrl: t.url,
      headers: { authorization: `Bearer ${token}` },
      fetch: checkedFetch(t.url),
    });
    const res = await api.POST('/api/v1/users', {
      body: { name: 'No Email', email: 'not-an-email' },
    });
    expect(res.response.status).toBe(422);
    expect(res.error?.error.code).toBe('validation_failed');
    expect(res.error?.error.details?.map((d) => d.field)).toContain('email');
  });
});
