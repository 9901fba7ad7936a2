import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';

const run = promisify(execFile);
const root = resolve(import.meta.dirname, '..');
const dir = mkdtempSync(join(tmpdir(), 'changes-check-'));
const schema = readFileSync(join(root, 'schema.graphql'), 'utf8');
const changes = readFileSync(join(root, 'docs/changes.md'), 'utf8');

function file(name: string, text: string): string {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
}

const doc = (paths: string[]) =>
  JSON.stringify({
    openapi: '3.0.0',
    info: { title: 'x', version: '1' },
    paths: Object.fromEntries(
      paths.map((p) => [p, { get: { responses: { 200: { description: 'ok' } } } }]),
    ),
  });

/** `npm run changes:check` (the script itself) with explicit files: exit code and output. */
async function check(opts: Record<string, string>): Promise<{ code: number; out: string }> {
  const args = Object.entries(opts).flatMap(([k, v]) => [`--${k}`, v]);
  try {
    const r = await run('node', [join(root, 'scripts/changes-check.mjs'), 'HEAD', ...args], {
      cwd: root,
    });
    return { code: 0, out: r.stdout + r.stderr };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, out: e.stdout + e.stderr };
  }
}

describe('changes:check (the breaking-change gate, docs/changes.md)', () => {
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const same = file('same.json', doc(['/api/v1/a', '/api/v1/b']));

  it('passes when schema.graphql and the OpenAPI document did not change', async () => {
    const base = file('base.graphql', schema);
    const r = await check({
      'base-schema': base,
      schema: base,
      'base-openapi': same,
      openapi: same,
    });
    expect(r.code, r.out).toBe(0);
  });

  it('fails naming Post.content when the field is removed from schema.graphql, and passes once docs/changes.md records it with its deprecation history', async () => {
    const removed = schema
      .split('\n')
      .filter((l) => !l.includes('@deprecated(reason: "Use `body`.")'))
      .join('\n');
    expect(removed).not.toBe(schema);
    const opts = {
      'base-schema': file('base.graphql', schema),
      schema: file('removed.graphql', removed),
      'base-openapi': same,
      openapi: same,
    };
    const r = await check(opts);
    expect(r.code).toBe(1);
    expect(r.out).toMatch(/BREAKING: GraphQL `Post\.content`/);

    const recorded = file(
      'changes.md',
      changes.replace(
        '## Breaking changes\n',
        '## Breaking changes\n\n- `Post.content`: deprecated 2026-11-28 ("Use `body`."), removed 2027-06-01.\n',
      ),
    );
    const again = await check({ ...opts, changes: recorded });
    expect(again.code, again.out).toBe(0);
    expect(again.out).toMatch(/recorded: GraphQL `Post\.content`/);
  });

  it('fails naming the path when an operation is removed from the OpenAPI document', async () => {
    const base = file('base.graphql', schema);
    const r = await check({
      'base-schema': base,
      schema: base,
      'base-openapi': same,
      openapi: file('less.json', doc(['/api/v1/a'])),
    });
    expect(r.code).toBe(1);
    expect(r.out).toMatch(/BREAKING: OpenAPI `paths\.\/api\/v1\/b`/);
  });
});
