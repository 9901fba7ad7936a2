#!/usr/bin/env node
// Type-checks every TypeScript block (```ts / ```typescript) of README.md and docs/*.md with
// `tsc --strict`, each block a module of its own, against the project's packages (@apollo/client,
// graphql-ws, openapi-fetch...). A block that imports `./api.js` gets the types a client team makes
// of the OpenAPI document with openapi-typescript's DEFAULT options (`npx openapi-typescript
// openapi.json -o api.d.ts`, docs/openapi.md), so the documented calls compile as a team would write them.
//
//   node scripts/check-doc-snippets.mjs [--openapi openapi.json]
//
// openapi.json: `npm run openapi:write` (CI writes it before this step). Exit status 1 when a block
// does not compile (its file, line and tsc's message are printed), 2 when there is nothing to check.
import { execFileSync } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const args = process.argv.slice(2);
const openapiArg = args.indexOf('--openapi');
const openapi = resolve(openapiArg >= 0 ? args[openapiArg + 1] : join(ROOT, 'openapi.json'));

/** The ```ts blocks of a Markdown file: its text and the line its code starts on. */
function blocksOf(file) {
  const lines = readFileSync(file, 'utf8').split('\n');
  const blocks = [];
  let open = null;
  lines.forEach((line, i) => {
    if (open === null) {
      const m = /^\s*```(ts|typescript)\s*$/.exec(line);
      if (m) {
        open = { line: i + 2, code: [] };
      }
    } else if (/^\s*```\s*$/.test(line)) {
      blocks.push({ line: open.line, code: open.code.join('\n') + '\n' });
      open = null;
    } else {
      open.code.push(line);
    }
  });
  return blocks;
}

const docs = [
  join(ROOT, 'README.md'),
  ...readdirSync(join(ROOT, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .sort()
    .map((f) => join(ROOT, 'docs', f)),
];
const snippets = docs.flatMap((file) =>
  blocksOf(file).map((b) => ({ ...b, doc: relative(ROOT, file) })),
);
if (snippets.length === 0) {
  console.error('no ```ts block found in README.md or docs/*.md');
  process.exit(2);
}

// Inside node_modules/ so that the blocks' imports resolve to the project's packages.
const cacheDir = join(ROOT, 'node_modules', '.cache');
mkdirSync(cacheDir, { recursive: true });
const dir = mkdtempSync(join(cacheDir, 'doc-snippets-'));
const status = { code: 0 };
try {
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ type: 'module' }));
  const files = snippets.map((s, i) => {
    const name = `${s.doc.replace(/[^A-Za-z0-9]+/g, '_')}_${s.line}.ts`;
    writeFileSync(join(dir, name), s.code);
    return { ...s, name, index: i };
  });
  if (files.some((f) => /from '\.\/api\.js'/.test(f.code))) {
    if (!existsSync(openapi)) {
      console.error(
        `${openapi} is missing: run \`npm run openapi:write\` first (or pass --openapi <file>)`,
      );
      process.exit(2);
    }
    // openapi-typescript's default options, as docs/openapi.md tells a client team to run it
    execFileSync(
      process.execPath,
      [
        join(ROOT, 'node_modules/openapi-typescript/bin/cli.js'),
        openapi,
        '-o',
        join(dir, 'api.d.ts'),
      ],
      { stdio: ['ignore', 'ignore', 'inherit'] },
    );
  }
  writeFileSync(
    join(dir, 'tsconfig.json'),
    JSON.stringify({
      compilerOptions: {
        strict: true,
        noEmit: true,
        target: 'ES2023',
        lib: ['ES2023', 'DOM', 'DOM.Iterable'],
        module: 'nodenext',
        moduleResolution: 'nodenext',
        types: ['node'],
        typeRoots: [join(ROOT, 'node_modules/@types')],
        skipLibCheck: true,
        isolatedModules: true,
        moduleDetection: 'force',
      },
      include: ['*.ts'],
    }),
  );
  let output = '';
  try {
    execFileSync(
      process.execPath,
      [join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', dir, '--pretty', 'false'],
      {
        encoding: 'utf8',
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
  } catch (err) {
    output = `${err.stdout ?? ''}${err.stderr ?? ''}`;
    status.code = 1;
  }
  // tsc names the temporary file and the block's line: print the Markdown file and its line instead
  for (const line of output.split('\n').filter(Boolean)) {
    const m = /^(?:.*[\\/])?([^\\/(]+\.ts)\((\d+),(\d+)\): (.*)$/.exec(line);
    const file = m && files.find((f) => f.name === m[1]);
    console.error(file ? `${file.doc}:${file.line + Number(m[2]) - 1}:${m[3]}: ${m[4]}` : line);
  }
  const where = [...new Set(files.map((f) => f.doc))].join(', ');
  console.log(
    status.code === 0
      ? `${files.length} TypeScript blocks type-check (tsc --strict): ${where}`
      : `TypeScript blocks that do not type-check: see above (${files.length} blocks in ${where})`,
  );
} finally {
  rmSync(dir, { recursive: true, force: true });
}
process.exit(status.code);
