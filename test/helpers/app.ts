import { randomBytes, generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import { createApp, type CreateAppOptions } from '../../src/app.factory.js';
import { loadConfig, type AppConfig } from '../../src/config/config.js';

export const ADMIN_EMAIL = 'admin@atrium.test';
export const ADMIN_PASSWORD = 'admin-password-123';
export const PUBLIC_URL = 'http://atrium.test';

/** One signing key per test process, so two app instances in a test accept each other's tokens. */
const SHARED_KEY = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({
  type: 'pkcs8',
  format: 'pem',
}) as string;

export const usingPostgres = (process.env.DATABASE_URL ?? '').startsWith('postgres');
export const usingRedis = Boolean(process.env.REDIS_URL);

/**
 * A new PostgreSQL schema name for a suite: `atrium_t_<creation time in base 36>_<random>`. The time
 * lets test/global-setup.ts drop the schemas of runs long over without touching those of a run that
 * is still going on the same database.
 */
export function testSchemaName(): string {
  return `atrium_t_${Date.now().toString(36)}_${randomBytes(6).toString('hex')}`;
}

/** A new database for a suite: SQLite in memory, or a fresh PostgreSQL schema of the test database. */
export function freshDatabaseUrl(): string {
  const url = process.env.DATABASE_URL;
  if (!url?.startsWith('postgres')) {
    return 'sqlite::memory:';
  }
  const u = new URL(url);
  u.searchParams.set('schema', testSchemaName());
  return u.toString();
}

export interface TestApp {
  app: NestFastifyApplication;
  url: string;
  config: AppConfig;
  close(): Promise<void>;
}

/**
 * Starts the real application on an ephemeral port: the same factory as main.ts, real database,
 * real Redis when REDIS_URL is set. `env` overrides configuration variables.
 */
export async function startApp(
  env: Record<string, string | undefined> = {},
  options: CreateAppOptions = {},
): Promise<TestApp> {
  const config = loadConfig({
    NODE_ENV: 'test',
    PORT: '0',
    PUBLIC_URL: PUBLIC_URL,
    DATABASE_URL: env.DATABASE_URL ?? freshDatabaseUrl(),
    REDIS_URL: process.env.REDIS_URL,
    // CI runs one pass with SQLITE_STATEMENT_CACHE=false (TypeORM's query runner on SQLite)
    SQLITE_STATEMENT_CACHE: process.env.SQLITE_STATEMENT_CACHE,
    // each app gets its own Redis namespace unless a test shares one between instances on purpose
    REDIS_PREFIX: `atrium-test:${randomBytes(4).toString('hex')}:`,
    // a loaded test machine can hold a Redis round trip past the default 100 ms, and the limiter then
    // fails open (no RateLimit headers, no 429) in tests that are not about Redis: tests of a hung
    // Redis set 100 again
    REDIS_COMMAND_TIMEOUT_MS: '1000',
    ADMIN_EMAIL,
    ADMIN_PASSWORD,
    JWT_PRIVATE_KEY: SHARED_KEY,
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent',
    RATE_LIMIT: '1000000',
    AUTH_RATE_LIMIT: '1000000',
    GRAPHQL_COST_BUDGET: '1000000000',
    WS_MAX_CONNECTIONS_PER_IDENTITY: '1000000',
    WS_MAX_OPERATIONS_PER_CONNECTION: '1000000',
    // cheap argon2id parameters (accepted with NODE_ENV=test only); test/users.e2e-spec.ts checks
    // the real profile
    PASSWORD_HASH_PROFILE: 'test',
    ...env,
  });
  const app = await createApp(config, options);
  // an ephemeral port, unless `env.PORT` asks for one (a PUBLIC_URL naming the listener itself)
  await app.listen({ port: env.PORT ? config.port : 0, host: '127.0.0.1' });
  const address = app.getHttpServer().address() as { port: number };
  return { app, config, url: `http://127.0.0.1:${address.port}`, close: () => app.close() };
}

/**
 * Two instances of the app on one database (a shared SQLite file, or one PostgreSQL schema) and one
 * Redis namespace: the multi-instance shape. `env` applies to both.
 */
export async function startPair(
  env: Record<string, string | undefined> = {},
): Promise<{ a: TestApp; b: TestApp; close(): Promise<void> }> {
  const dir = usingPostgres ? undefined : mkdtempSync(join(tmpdir(), 'atrium-pair-'));
  const shared = {
    DATABASE_URL: dir ? `sqlite:${join(dir, 'shared.sqlite')}` : freshDatabaseUrl(),
    REDIS_PREFIX: `atrium-test:${randomBytes(4).toString('hex')}:`,
    ...env,
  };
  const a = await startApp(shared);
  const b = await startApp(shared).catch(async (err: unknown) => {
    await a.close();
    throw err;
  });
  return {
    a,
    b,
    async close() {
      await a.close();
      await b.close();
      if (dir) {
        rmSync(dir, { recursive: true, force: true });
      }
    },
  };
}
