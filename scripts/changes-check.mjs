#!/usr/bin/env node
// `npm run changes:check [-- <base ref>] [options]`: fails on a breaking change of `schema.graphql`
// (GraphQL Inspector) or of the OpenAPI document (openapi-diff) against a base ref, unless
// docs/changes.md records it under "## Breaking changes" (a line naming the element in backticks and
// its deprecation history: the word "deprecated"). See docs/changes.md, "The breaking-change gate".
//
//   <base ref>                the ref to compare with (default: origin/main when it exists, else HEAD)
//   --schema <file>           the new schema (default: schema.graphql)
//   --base-schema <file>      the old schema (default: `git show <base>:schema.graphql`)
//   --openapi <file>          the new OpenAPI document (default: written from this tree's build)
//   --base-openapi <file>     the old one (default: written from a build of <base> in a temporary
//                             worktree; skipped when src/ is the same in both)
//   --changes <file>          the record (default: docs/changes.md)
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { CriticalityLevel, diff } from '@graphql-inspector/core';
import { buildSchema } from 'graphql';
import openapiDiff from 'openapi-diff';

const root = resolve(import.meta.dirname, '..');
const args = process.argv.slice(2);
const options = {};
let base;
for (let i = 0; i < args.length; i++) {
  if (args[i].startsWith('--')) {
    options[args[i].slice(2)] = args[++i];
  } else {
    base = args[i];
  }
}

const git = (...a) => execFileSync('git', a, { cwd: root, encoding: 'utf8' });
const refExists = (ref) => {
  try {
    git('rev-parse', '--verify', '--quiet', `${ref}^{commit}`);
    return true;
  } catch {
    return false;
  }
};
base ??= refExists('origin/main') ? 'origin/main' : 'HEAD';

/** The recorded breaking changes: lines of the "Breaking changes" section of docs/changes.md. */
function recordedLines() {
  const text = readFileSync(options.changes ?? join(root, 'docs/changes.md'), 'utf8');
  const start = text.indexOf('\n## Breaking changes');
  if (start < 0) {
    return [];
  }
  const rest = text.slice(start + 1);
  const end = rest.indexOf('\n## ', 3);
  return (end < 0 ? rest : rest.slice(0, end)).split('\n');
}

function recorded(lines, element) {
  return lines.some((l) => l.includes(`\`${element}\``) && /deprecated/i.test(l));
}

async function graphqlBreaks() {
  const oldSdl = options['base-schema']
    ? readFileSync(options['base-schema'], 'utf8')
    : git('show', `${base}:schema.graphql`);
  const newSdl = readFileSync(options.schema ?? join(root, 'schema.graphql'), 'utf8');
  const changes = await diff(
    buildSchema(oldSdl, { assumeValidSDL: true }),
    buildSchema(newSdl, { assumeValidSDL: true }),
  );
  return changes
    .filter((c) => c.criticality.level === CriticalityLevel.Breaking)
    .map((c) => ({ kind: 'GraphQL', element: c.path ?? c.type, message: c.message }));
}

/** Writes the OpenAPI document of the tree at `dir` (built there first) to `file`. */
function writeOpenApi(dir, file) {
  execFileSync('npx', ['tsc', '-p', 'tsconfig.build.json'], { cwd: dir, stdio: 'inherit' });
  execFileSync('node', ['dist/scripts/write-openapi.js', file], { cwd: dir, stdio: 'inherit' });
}

async function openapiBreaks() {
  const tmp = mkdtempSync(join(tmpdir(), 'changes-check-'));
  try {
    let oldFile = options['base-openapi'];
    let newFile = options.openapi;
    if (!oldFile) {
      // the document is built from src/: a tree whose src/ is the base's serves the base's document
      try {
        git('diff', '--quiet', base, '--', 'src');
        return [];
      } catch {
        // src/ differs: build the base's document (and this tree's, unless given)
      }
    }
    if (!newFile) {
      newFile = join(tmp, 'head.json');
      writeOpenApi(root, newFile);
    }
    if (!oldFile) {
      oldFile = join(tmp, 'base.json');
      const tree = join(tmp, 'base');
      git('worktree', 'add', '--detach', tree, base);
      try {
        symlinkSync(join(root, 'node_modules'), join(tree, 'node_modules'));
        writeOpenApi(tree, oldFile);
      } finally {
        git('worktree', 'remove', '--force', tree);
      }
    }
    const spec = (file, location) => ({
      content: readFileSync(file, 'utf8'),
      location,
      format: 'openapi3',
    });
    const result = await openapiDiff.diffSpecs({
      sourceSpec: spec(oldFile, 'base'),
      destinationSpec: spec(newFile, 'head'),
    });
    return (result.breakingDifferences ?? []).map((d) => {
      const where = [
        ...(d.sourceSpecEntityDetails ?? []),
        ...(d.destinationSpecEntityDetails ?? []),
      ]
        .map((e) => e.location)
        .find(Boolean);
      return { kind: 'OpenAPI', element: where ?? d.code, message: d.code };
    });
  } finally {
    if (existsSync(tmp)) {
      rmSync(tmp, { recursive: true, force: true });
    }
  }
}

const lines = recordedLines();
const breaks = [...(await graphqlBreaks()), ...(await openapiBreaks())];
const unrecorded = breaks.filter((b) => !recorded(lines, b.element));
for (const b of breaks) {
  const ok = !unrecorded.includes(b);
  console.log(`${ok ? 'recorded' : 'BREAKING'}: ${b.kind} \`${b.element}\`: ${b.message}`);
}
if (unrecorded.length > 0) {
  console.error(
    `\n${unrecorded.length} breaking change(s) against ${base} not recorded in docs/changes.md ("Breaking changes": the element in backticks with its deprecation history)`,
  );
  process.exit(1);
}
console.log(
  `changes:check: no unrecorded breaking change against ${base} (${breaks.length} recorded)`,
);
