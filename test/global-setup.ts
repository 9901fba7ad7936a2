import { existsSync, mkdtempSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';

/**
 * Every test process appends how many REST responses it checked against the OpenAPI document
 * (test/helpers/openapi.ts) to this file; the teardown prints the total.
 */
function openApiStatsFile(): string {
  const file = join(tmpdir(), `atrium-openapi-checks-${process.pid}.txt`);
  rmSync(file, { force: true });
  process.env.OPENAPI_STATS_FILE = file;
  return file;
}

function printOpenApiStats(file: string): void {
  if (!existsSync(file)) {
    return;
  }
  let validated = 0;
  let exempt = 0;
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    const [v, e] = line.split(' ').map(Number);
    validated += v || 0;
    exempt += e || 0;
  }
  rmSync(file, { force: true });
  console.log(
    `OpenAPI: ${validated} REST responses checked against the document (${exempt} outside it: GraphQL, OAuth protocol, docs, OPTIONS)`,
  );
}

/**
 * The folder test processes compile the service into when a suite runs it as a process and
 * ATRIUM_TEST_BUILD names no build (test/helpers/build.ts): one per run, removed at the end.
 */
function buildRoot(): string {
  const parent = new URL('../node_modules/.cache/atrium-test-builds', import.meta.url).pathname;
  mkdirSync(parent, { recursive: true });
  const dir = mkdtempSync(join(parent, 'run-'));
  process.env.ATRIUM_TEST_BUILD_ROOT = dir;
  return dir;
}

/**
 * Whether a suite's schema (test/helpers/app.ts testSchemaName) belongs to a run long over: made
 * more than an hour ago (no run lasts that long), or named without its creation time (older code).
 * A run still going on the same database (another checkout's) keeps its schemas.
 */
function leftOver(schema: string): boolean {
  const made = /^atrium_t_([0-9a-z]+)_[0-9a-f]+$/.exec(schema);
  return !made || Date.now() - parseInt(made[1], 36) > 60 * 60 * 1000;
}

/** On PostgreSQL, drop the per-suite schemas earlier runs left behind (each suite makes its own). */
export default async function setup(): Promise<() => void> {
  console.log(
    `Time-outs scaled by ${process.env.TEST_TIME_FACTOR ?? 1} (1 + load per core at the start; TEST_TIME_FACTOR sets it)`,
  );
  const statsFile = openApiStatsFile();
  const builds = buildRoot();
  const teardown = () => {
    printOpenApiStats(statsFile);
    rmSync(builds, { recursive: true, force: true });
  };
  const url = process.env.DATABASE_URL;
  if (!url?.startsWith('postgres')) {
    return teardown;
  }
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query<{ nspname: string }>(
      "SELECT nspname FROM pg_namespace WHERE nspname LIKE 'atrium_t_%'",
    );
    for (const { nspname } of rows) {
      if (leftOver(nspname)) {
        await client.query(`DROP SCHEMA IF EXISTS "${nspname}" CASCADE`);
      }
    }
  } finally {
    await client.end();
  }
  return teardown;
}
