import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  GraphQLID,
  GraphQLList,
  GraphQLNonNull,
  GraphQLObjectType,
  GraphQLSchema,
  GraphQLString,
  parse,
} from 'graphql';
import { describe, expect, it } from 'vitest';
import { CompiledExecutor } from './execution/compiled-executor.js';

// The patches of patches/ (patch-package, applied by `npm install`/`npm ci` through postinstall;
// docs/performance.md "GraphQL path"). Each is written against one version of its package: when an
// upgrade changes the version, this test fails until the patch is redone for the new version (or
// dropped, when upstream has the change), and it fails when an install did not apply a patch.
const ROOT = join(import.meta.dirname, '..', '..');

const PATCHES = [
  {
    pkg: '@apollo/server',
    file: 'dist/esm/requestPipeline.js',
    // no Negotiator per request unless Accept names a multipart type
    applied: "useLegacyIncremental: prefersLegacyIncremental(request.http?.headers.get('accept'))",
  },
  {
    pkg: '@apollo/server',
    file: 'dist/esm/requestPipeline.js',
    // a query's SHA-256 remembered by its text (texts up to 4 KB, at most 512 kept)
    applied: 'let hash = queryHashes.get(query);',
    bounded: ['if (query.length > 4096) {', 'if (queryHashes.size >= 512) {'],
  },
  {
    pkg: '@apollo/server',
    file: 'dist/esm/ApolloServer.js',
    // the single result's content type negotiated once per Accept value (at most 256 kept)
    applied: 'let chosen = singleResultContentTypes.get(acceptHeader);',
    bounded: ['if (singleResultContentTypes.size >= 256) {'],
  },
  {
    pkg: '@apollo/utils.createhash',
    file: 'dist/index.js',
    // `crypto` loaded once, not on every query hash
    applied: 'if (nodeCrypto) {',
  },
  {
    pkg: 'graphql-jit',
    file: 'dist/execution.js',
    // a list item that fails is set to null at its own index (upstream pushes a null at the end, so
    // an item that fails after a later one resolved made the list one longer, its items shifted)
    applied: 'resultArray[idx${newDepth}] = null;',
  },
];

function installedVersion(pkg: string): string {
  const json = JSON.parse(
    readFileSync(join(ROOT, 'node_modules', pkg, 'package.json'), 'utf8'),
  ) as { version: string };
  return json.version;
}

describe('patches/ (patch-package)', () => {
  it('has one patch per patched package, for the installed version', () => {
    const files = readdirSync(join(ROOT, 'patches')).filter((f) => f.endsWith('.patch'));
    const expected = new Set(
      PATCHES.map((p) => `${p.pkg.replace('/', '+')}+${installedVersion(p.pkg)}.patch`),
    );
    expect(files.sort()).toEqual([...expected].sort());
  });

  it.each(PATCHES)('$pkg is patched in node_modules ($applied)', ({ pkg, file, applied }) => {
    const text = readFileSync(join(ROOT, 'node_modules', pkg, file), 'utf8');
    expect(text).toContain(applied);
  });

  it.each(PATCHES.filter((p) => p.bounded))(
    '$pkg: what the patch remembers is bounded ($applied)',
    ({ pkg, file, bounded }) => {
      const text = readFileSync(join(ROOT, 'node_modules', pkg, file), 'utf8');
      for (const bound of bounded ?? []) {
        expect(text).toContain(bound);
      }
    },
  );

  it('package.json applies the patches on install', () => {
    const json = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
      scripts: Record<string, string>;
    };
    expect(json.scripts.postinstall).toBe('patch-package');
  });
});

describe('graphql-jit, patched: a list item that fails late', () => {
  // item 0 is null, item 1 fails only after item 2 has resolved: the answer keeps three items
  const later = <T>(ms: number, value: () => T): Promise<T> =>
    new Promise((resolve) => setTimeout(resolve, ms)).then(value);
  const Item = new GraphQLObjectType({
    name: 'Item',
    fields: { id: { type: new GraphQLNonNull(GraphQLID) }, title: { type: GraphQLString } },
  });
  const schema = new GraphQLSchema({
    query: new GraphQLObjectType({
      name: 'Query',
      fields: {
        items: {
          type: new GraphQLNonNull(new GraphQLList(Item)),
          resolve: () => [
            later(1, () => null),
            later(20, () => {
              throw new Error('Item not found');
            }),
            later(5, () => ({ id: 'i2', title: 'two' })),
          ],
        },
      },
    }),
  });

  it("answers null at the failed item's own index, as graphql-js does", async () => {
    const executor = new CompiledExecutor();
    const query = '{ items { id title } }';
    const result = await executor.execute({
      schema,
      document: parse(query),
      query,
      operationName: undefined,
      variables: undefined,
      contextValue: {},
    });
    expect(executor.runs.compiled).toBe(1);
    expect(result.data).toEqual({ items: [null, null, { id: 'i2', title: 'two' }] });
    expect(result.errors?.map((e) => [e.message, e.path])).toEqual([
      ['Item not found', ['items', 1]],
    ]);
  });
});
