import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

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
    pkg: '@apollo/utils.createhash',
    file: 'dist/index.js',
    // `crypto` loaded once, not on every query hash
    applied: 'if (nodeCrypto) {',
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
    expect(files.sort()).toEqual(
      PATCHES.map((p) => `${p.pkg.replace('/', '+')}+${installedVersion(p.pkg)}.patch`).sort(),
    );
  });

  it.each(PATCHES)('$pkg is patched in node_modules', ({ pkg, file, applied }) => {
    const text = readFileSync(join(ROOT, 'node_modules', pkg, file), 'utf8');
    expect(text).toContain(applied);
  });

  it('package.json applies the patches on install', () => {
    const json = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
      scripts: Record<string, string>;
    };
    expect(json.scripts.postinstall).toBe('patch-package');
  });
});
