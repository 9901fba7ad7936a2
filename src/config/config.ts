import { existsSync } from 'node:fs';
import { config as loadDotenv } from 'dotenv';

/**
 * argon2id parameter sets of new password hashes (src/identity/passwords.ts): `owasp` everywhere,
 * `test` (cheap) only with NODE_ENV=test, for the test suite.
 */
const PASSWORD_HASH_PROFILES = ['owasp', 'test'] as const;
export type PasswordHashProfile = (typeof PASSWORD_HASH_PROFILES)[number];

/** Where the database lives; parsed from DATABASE_URL. */
export type DatabaseConfig =
  | { type: 'sqlite'; path: string }
  | {
      type: 'postgres';
      url: string;
      schema?: string;
      /** Longest wait for a pooled connection (a free one, or a new one's handshake). */
      connectTimeoutMs: number;
      /** Longest wait for a statement's answer; then its connection is closed (a hung server). */
      queryTimeoutMs: number;
    };

export interface AppConfig {
  nodeEnv: 'development' | 'production' | 'test';
  port: number;
  host: string;
  publicUrl: string;
  database: DatabaseConfig;
  redisUrl?: string;
  /** Prefix of every Redis key and channel (lets several deployments or test runs share one Redis). */
  redisPrefix: string;
  /**
   * How long a command of the application's Redis clients (rate limits, readiness of their
   * connections) may take before it fails: the rate limiter fails open after it (docs/rate-limits.md).
   */
  redisCommandTimeoutMs: number;
  adminEmail?: string;
  adminPassword?: string;
  /** argon2id parameters of new password hashes (src/identity/passwords.ts); `test` only with NODE_ENV=test. */
  passwordHashProfile: PasswordHashProfile;
  jwtPrivateKey?: string;
  jwtAccessTtlS: number;
  refreshTtlS: number;
  corsOrigins: string[];
  rateLimit: number;
  rateLimitWindowS: number;
  authRateLimit: number;
  /** Rate limiting (docs/rate-limits.md): the switch exists for the limiter-overhead benchmark. */
  rateLimitEnabled: boolean;
  /**
   * SQLite: hot-path raw SQL runs cached prepared statements on TypeORM's own better-sqlite3
   * connection (`DatabaseService.query`); false sends it through TypeORM's query runner instead.
   */
  sqliteStatementCache: boolean;
  authRateLimitWindowS: number;
  /** Failed password checks per target account per window (default AUTH_RATE_LIMIT). */
  authAccountRateLimit: number;
  /** Failed credential checks per address per window past which no password is checked (default 10 x AUTH_RATE_LIMIT). */
  authAddressHardLimit: number;
  /** Client-authenticated `/oauth/token` requests per OAuth client per minute (docs/rate-limits.md). */
  oauthTokenRateLimit: number;
  /** How long a rotated OAuth client secret keeps working next to the new one. */
  oauthSecretOverlapS: number;
  /** A first-party refresh token presented again within this many seconds returns the same new pair. */
  refreshReuseGraceS: number;
  graphqlCostBudget: number;
  graphqlCostWindowS: number;
  /** Audit entries older than this many days are purged (docs/admin.md "Audit log"). */
  auditRetentionDays: number;
  wsMaxConnectionsPerIdentity: number;
  wsMaxOperationsPerConnection: number;
  /** How often an idle WebSocket's credentials are checked again (docs/realtime.md). */
  wsRecheckIntervalS: number;
  /** Unsent bytes past which a subscription socket is a slow consumer, closed with 1013 (docs/realtime.md). */
  wsSendBufferBytes: number;
  /** graphql-ws keep-alive: a ping this often; a socket that has not answered the last one is dropped. */
  wsKeepAliveMs: number;
  trustedProxies: string[];
  /** Port of the internal listener serving /metrics alone; unset = /metrics on the main port. */
  metricsPort?: number;
  /** How long an Idempotency-Key's first response is kept and replayed (docs/idempotency.md). */
  idempotencyTtlS: number;
  logLevel: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
  graphqlIntrospection: boolean;
  graphqlDevelopment: boolean;
  /** Queries and mutations over HTTP run compiled by graphql-jit (src/graphql/execution/). */
  graphqlCompiledExecution: boolean;
  /** The schema is also an Apollo Federation 2 subgraph (docs/graphql.md "Federation"). */
  graphqlFederation: boolean;
  /** Trusted documents (docs/graphql.md "Trusted documents"): the manifest file loaded at boot, and the mode. */
  graphqlTrustedDocuments?: string;
  graphqlTrustedDocumentsMode: TrustedDocumentsMode;
  dataDir: string;
  /** HTTP server timeouts and request-shape limits (docs/limits.md). */
  http: HttpLimitsConfig;
  /** Graceful shutdown on SIGTERM/SIGINT (docs/limits.md "Shutdown"). */
  shutdown: ShutdownConfig;
  /** Webhook deliveries (docs/webhooks.md). */
  webhooks: WebhooksConfig;
}

const TRUSTED_DOCUMENTS_MODES = ['off', 'audit', 'enforce'] as const;
export type TrustedDocumentsMode = (typeof TRUSTED_DOCUMENTS_MODES)[number];

export interface WebhooksConfig {
  /** Delays in seconds between a failed attempt and the next; after the last one the delivery fails. */
  retryScheduleS: number[];
  /** An endpoint whose deliveries have all failed for this long is disabled. */
  disableAfterS: number;
  /** Delivery rows (and their events) older than this are removed. */
  logRetentionDays: number;
  /** Host names (literal) and addresses or CIDRs (matched against resolved addresses) exempt from the SSRF rules. */
  allowedHosts: string[];
  /** Longest wait for a receiver's answer. */
  timeoutMs: number;
  /** Deliveries in flight at once per instance. */
  concurrency: number;
  /** Deliveries in flight at once per instance to one endpoint (a slow receiver holds no more slots). */
  endpointConcurrency: number;
  /** false: this instance records events but delivers none (API-only replicas; the others deliver). */
  deliveryEnabled: boolean;
}

export interface ShutdownConfig {
  /** Time between the signal and closing the server, with readiness already answering 503. */
  drainDelayMs: number;
  /** The process exits at most this long after the signal, whatever is still open. */
  graceMs: number;
}

interface HttpLimitsConfig {
  /** Time to receive a request's headers (Node's `headersTimeout`). */
  headersTimeoutMs: number;
  /** Time to receive a whole request, headers and body (Node's `requestTimeout`). */
  requestTimeoutMs: number;
  /** Idle time of a keep-alive connection between requests (above a proxy's upstream idle timeout). */
  keepAliveTimeoutMs: number;
  /** Deepest nesting of arrays/objects in a JSON body. */
  bodyMaxDepth: number;
  /** Most object members plus array elements in one JSON body (all levels together). */
  bodyMaxItems: number;
}

export const APP_CONFIG = Symbol('APP_CONFIG');

/** A bad configuration value: the message is one line naming the variable. */
export class ConfigError extends Error {
  constructor(variable: string, problem: string) {
    super(`Invalid configuration: ${variable} ${problem}`);
    this.name = 'ConfigError';
  }
}

const APOLLO_STUDIO_ORIGIN = 'https://studio.apollographql.com';
/**
 * Apollo Studio plus local dev servers at any port, under each name a browser may give the loopback
 * host: a Vite or Next dev server is opened at `localhost`, `127.0.0.1` or `[::1]` alike.
 */
const DEFAULT_CORS_ORIGINS = [
  APOLLO_STUDIO_ORIGIN,
  'http://localhost:*',
  'http://127.0.0.1:*',
  'http://[::1]:*',
].join(',');
const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

function int(
  env: NodeJS.ProcessEnv,
  name: string,
  fallback: number,
  min: number,
  max: number,
): number {
  const raw = env[name];
  if (raw === undefined || raw === '') {
    return fallback;
  }
  if (!/^\d+$/.test(raw.trim())) {
    throw new ConfigError(name, `must be an integer, got "${raw}"`);
  }
  const value = Number(raw);
  if (value < min || value > max) {
    throw new ConfigError(name, `must be between ${min} and ${max}, got ${value}`);
  }
  return value;
}

function bool(env: NodeJS.ProcessEnv, name: string, fallback: boolean): boolean {
  const raw = env[name];
  if (raw === undefined || raw === '') {
    return fallback;
  }
  if (/^(1|true|yes|on)$/i.test(raw)) {
    return true;
  }
  if (/^(0|false|no|off)$/i.test(raw)) {
    return false;
  }
  throw new ConfigError(name, `must be true or false, got "${raw}"`);
}

function url(name: string, raw: string, protocols: string[]): URL {
  let parsed: URL;
  try {
    parsed = new URL(raw);
  } catch {
    throw new ConfigError(name, `must be a URL, got "${raw}"`);
  }
  if (!protocols.includes(parsed.protocol)) {
    throw new ConfigError(name, `must use ${protocols.join(' or ')}, got "${parsed.protocol}"`);
  }
  return parsed;
}

function parseDatabase(raw: string, env: NodeJS.ProcessEnv): DatabaseConfig {
  if (raw.startsWith('sqlite:')) {
    const path = raw.slice('sqlite:'.length);
    if (path === '') {
      throw new ConfigError('DATABASE_URL', 'needs a path after "sqlite:" (or ":memory:")');
    }
    return { type: 'sqlite', path };
  }
  const parsed = url('DATABASE_URL', raw, ['postgres:', 'postgresql:']);
  // `?schema=` selects a PostgreSQL schema (used by the tests to isolate suites).
  const schema = parsed.searchParams.get('schema') ?? undefined;
  if (schema !== undefined && !/^[a-z_][a-z0-9_]{0,62}$/.test(schema)) {
    throw new ConfigError(
      'DATABASE_URL',
      `schema must be a lower-case identifier, got "${schema}"`,
    );
  }
  parsed.searchParams.delete('schema');
  return {
    type: 'postgres',
    url: parsed.toString(),
    schema,
    connectTimeoutMs: int(env, 'DATABASE_CONNECT_TIMEOUT_MS', 5_000, 100, 600_000),
    queryTimeoutMs: int(env, 'DATABASE_QUERY_TIMEOUT_MS', 10_000, 100, 3_600_000),
  };
}

/** The flags this Node runs with: its command line's and `NODE_OPTIONS`'s. */
export function runtimeFlags(env: NodeJS.ProcessEnv = process.env): string[] {
  return [...process.execArgv, ...(env.NODE_OPTIONS ?? '').split(/\s+/).filter(Boolean)];
}

/** Reads and validates the whole configuration; throws ConfigError on the first bad value. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): AppConfig {
  const nodeEnvRaw = env.NODE_ENV ?? 'development';
  if (!['development', 'production', 'test'].includes(nodeEnvRaw)) {
    throw new ConfigError(
      'NODE_ENV',
      `must be development, production or test, got "${nodeEnvRaw}"`,
    );
  }
  const nodeEnv = nodeEnvRaw as AppConfig['nodeEnv'];
  const port = int(env, 'PORT', 3000, 0, 65535);
  const publicUrl = (env.PUBLIC_URL ?? `http://localhost:${port}`).replace(/\/+$/, '');
  url('PUBLIC_URL', publicUrl, ['http:', 'https:']);

  const database = parseDatabase(env.DATABASE_URL ?? 'sqlite:data/atrium.sqlite', env);
  const metricsPort =
    env.METRICS_PORT === undefined || env.METRICS_PORT === ''
      ? undefined
      : int(env, 'METRICS_PORT', 0, 0, 65535);
  if (metricsPort !== undefined && metricsPort !== 0 && metricsPort === port) {
    throw new ConfigError('METRICS_PORT', `must differ from PORT (${port})`);
  }

  const redisUrl = env.REDIS_URL === undefined || env.REDIS_URL === '' ? undefined : env.REDIS_URL;
  if (redisUrl !== undefined) {
    url('REDIS_URL', redisUrl, ['redis:', 'rediss:']);
  }

  const adminEmail = env.ADMIN_EMAIL || undefined;
  const adminPassword = env.ADMIN_PASSWORD || undefined;
  if ((adminEmail === undefined) !== (adminPassword === undefined)) {
    throw new ConfigError(
      adminEmail ? 'ADMIN_PASSWORD' : 'ADMIN_EMAIL',
      'must be set together with the other',
    );
  }
  if (adminEmail !== undefined && !/^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(adminEmail)) {
    throw new ConfigError('ADMIN_EMAIL', `must be an email address, got "${adminEmail}"`);
  }
  if (adminPassword !== undefined && (adminPassword.length < 12 || adminPassword.length > 128)) {
    throw new ConfigError('ADMIN_PASSWORD', 'must be 12 to 128 characters long');
  }

  const passwordHashProfile = (env.PASSWORD_HASH_PROFILE || 'owasp') as PasswordHashProfile;
  if (!PASSWORD_HASH_PROFILES.includes(passwordHashProfile)) {
    throw new ConfigError(
      'PASSWORD_HASH_PROFILE',
      `must be one of ${PASSWORD_HASH_PROFILES.join(', ')}, got "${passwordHashProfile}"`,
    );
  }
  if (passwordHashProfile === 'test' && nodeEnv !== 'test') {
    // weak hashes are for the test suite only: never in a running deployment
    throw new ConfigError('PASSWORD_HASH_PROFILE', 'test is accepted only with NODE_ENV=test');
  }

  const jwtPrivateKey = env.JWT_PRIVATE_KEY ? env.JWT_PRIVATE_KEY.replace(/\\n/g, '\n') : undefined;
  if (jwtPrivateKey !== undefined && !jwtPrivateKey.includes('PRIVATE KEY-----')) {
    throw new ConfigError('JWT_PRIVATE_KEY', 'must be a PEM private key');
  }

  const corsOrigins = (env.CORS_ORIGINS ?? DEFAULT_CORS_ORIGINS)
    .split(',')
    .map((o) => o.trim())
    .filter((o) => o !== '');
  for (const origin of corsOrigins) {
    if (origin !== '*' && !/^https?:\/\/[^/\s]+$/.test(origin)) {
      throw new ConfigError(
        'CORS_ORIGINS',
        `has an invalid origin "${origin}" (scheme://host[:port])`,
      );
    }
  }

  const trustedMode = (env.GRAPHQL_TRUSTED_DOCUMENTS_MODE || 'off') as TrustedDocumentsMode;
  if (!TRUSTED_DOCUMENTS_MODES.includes(trustedMode)) {
    throw new ConfigError(
      'GRAPHQL_TRUSTED_DOCUMENTS_MODE',
      `must be one of ${TRUSTED_DOCUMENTS_MODES.join(', ')}, got "${trustedMode}"`,
    );
  }

  const logLevel = (env.LOG_LEVEL ?? 'info') as AppConfig['logLevel'];
  if (!LOG_LEVELS.includes(logLevel)) {
    throw new ConfigError(
      'LOG_LEVEL',
      `must be one of ${LOG_LEVELS.join(', ')}, got "${env.LOG_LEVEL}"`,
    );
  }

  return {
    nodeEnv,
    port,
    host: env.HOST ?? '127.0.0.1',
    publicUrl,
    database,
    redisUrl,
    redisPrefix: env.REDIS_PREFIX ?? 'atrium:',
    redisCommandTimeoutMs: int(env, 'REDIS_COMMAND_TIMEOUT_MS', 100, 10, 10_000),
    adminEmail,
    adminPassword,
    passwordHashProfile,
    jwtPrivateKey,
    jwtAccessTtlS: int(env, 'JWT_ACCESS_TTL_S', 900, 30, 86_400),
    refreshTtlS: int(env, 'REFRESH_TTL_S', 30 * 86_400, 1, 365 * 86_400),
    corsOrigins,
    rateLimit: int(env, 'RATE_LIMIT', 300, 1, 1_000_000_000),
    rateLimitWindowS: int(env, 'RATE_LIMIT_WINDOW_S', 60, 1, 86_400),
    authRateLimit: int(env, 'AUTH_RATE_LIMIT', 10, 1, 1_000_000_000),
    rateLimitEnabled: bool(env, 'RATE_LIMIT_ENABLED', true),
    sqliteStatementCache: bool(env, 'SQLITE_STATEMENT_CACHE', true),
    authRateLimitWindowS: int(env, 'AUTH_RATE_LIMIT_WINDOW_S', 60, 1, 86_400),
    authAccountRateLimit: int(
      env,
      'AUTH_ACCOUNT_RATE_LIMIT',
      int(env, 'AUTH_RATE_LIMIT', 10, 1, 1_000_000_000),
      1,
      1_000_000_000,
    ),
    authAddressHardLimit: int(
      env,
      'AUTH_ADDRESS_HARD_LIMIT',
      Math.min(1_000_000_000, 10 * int(env, 'AUTH_RATE_LIMIT', 10, 1, 1_000_000_000)),
      1,
      1_000_000_000,
    ),
    oauthTokenRateLimit: int(env, 'OAUTH_TOKEN_RATE_LIMIT', 600, 1, 1_000_000_000),
    oauthSecretOverlapS: int(env, 'OAUTH_SECRET_OVERLAP_S', 86_400, 0, 30 * 86_400),
    refreshReuseGraceS: int(env, 'REFRESH_REUSE_GRACE_S', 10, 0, 300),
    graphqlCostBudget: int(env, 'GRAPHQL_COST_BUDGET', 10_000, 1, 1_000_000_000),
    graphqlCostWindowS: int(env, 'GRAPHQL_COST_WINDOW_S', 60, 1, 86_400),
    auditRetentionDays: int(env, 'AUDIT_RETENTION_DAYS', 365, 1, 36_500),
    wsMaxConnectionsPerIdentity: int(env, 'WS_MAX_CONNECTIONS_PER_IDENTITY', 10, 1, 1_000_000),
    wsMaxOperationsPerConnection: int(env, 'WS_MAX_OPERATIONS_PER_CONNECTION', 50, 1, 1_000_000),
    wsRecheckIntervalS: int(env, 'WS_RECHECK_INTERVAL_S', 60, 1, 86_400),
    wsSendBufferBytes: int(env, 'WS_SEND_BUFFER_BYTES', 4 * 1024 * 1024, 16 * 1024, 1024 ** 3),
    wsKeepAliveMs: int(env, 'WS_KEEPALIVE_MS', 12_000, 1_000, 3_600_000),
    trustedProxies: (env.TRUSTED_PROXIES ?? '')
      .split(',')
      .map((p) => p.trim())
      .filter((p) => p !== ''),
    metricsPort,
    idempotencyTtlS: int(env, 'IDEMPOTENCY_TTL_S', 86_400, 1, 30 * 86_400),
    logLevel,
    graphqlIntrospection: bool(env, 'GRAPHQL_INTROSPECTION', true),
    graphqlDevelopment: bool(env, 'GRAPHQL_DEVELOPMENT', nodeEnv === 'development'),
    graphqlCompiledExecution: bool(env, 'GRAPHQL_COMPILED_EXECUTION', true),
    graphqlFederation: bool(env, 'GRAPHQL_FEDERATION', false),
    graphqlTrustedDocuments: env.GRAPHQL_TRUSTED_DOCUMENTS || undefined,
    graphqlTrustedDocumentsMode: trustedMode,
    dataDir: env.DATA_DIR ?? 'data',
    http: loadHttpLimits(env),
    shutdown: loadShutdown(env),
    webhooks: loadWebhooks(env),
  };
}

/** About three days of retries: 5 s, 1 min, 5 min, 30 min, 2 h, 5 h, 10 h, 12 h x3, 18 h. */
const DEFAULT_RETRY_SCHEDULE = '5,60,300,1800,7200,18000,36000,43200,43200,43200,64800';

function loadWebhooks(env: NodeJS.ProcessEnv): WebhooksConfig {
  const rawSchedule = env.WEBHOOK_RETRY_SCHEDULE_S || DEFAULT_RETRY_SCHEDULE;
  const retryScheduleS = rawSchedule.split(',').map((part) => part.trim());
  if (retryScheduleS.some((part) => !/^\d+(\.\d+)?$/.test(part)) || retryScheduleS.length > 50) {
    throw new ConfigError(
      'WEBHOOK_RETRY_SCHEDULE_S',
      `must be a comma list of at most 50 delays in seconds, got "${rawSchedule}"`,
    );
  }
  const allowedHosts = (env.WEBHOOK_ALLOWED_HOSTS ?? '')
    .split(',')
    .map((h) => h.trim().toLowerCase())
    .filter((h) => h !== '');
  for (const entry of allowedHosts) {
    if (entry.includes('/') && !/^[0-9a-f:.]+\/\d{1,3}$/.test(entry)) {
      throw new ConfigError('WEBHOOK_ALLOWED_HOSTS', `has an invalid CIDR "${entry}"`);
    }
  }
  return {
    retryScheduleS: retryScheduleS.map(Number),
    disableAfterS: int(env, 'WEBHOOK_DISABLE_AFTER_S', 259_200, 0, 365 * 86_400),
    logRetentionDays: int(env, 'WEBHOOK_LOG_RETENTION_DAYS', 30, 1, 3_650),
    allowedHosts,
    timeoutMs: int(env, 'WEBHOOK_TIMEOUT_MS', 10_000, 100, 60_000),
    concurrency: int(env, 'WEBHOOK_CONCURRENCY', 128, 1, 1_000),
    endpointConcurrency: int(env, 'WEBHOOK_ENDPOINT_CONCURRENCY', 32, 1, 1_000),
    deliveryEnabled: bool(env, 'WEBHOOK_DELIVERY_ENABLED', true),
  };
}

function loadShutdown(env: NodeJS.ProcessEnv): ShutdownConfig {
  const drainDelayMs = int(env, 'SHUTDOWN_DRAIN_DELAY_MS', 0, 0, 600_000);
  const graceMs = int(env, 'SHUTDOWN_GRACE_MS', 8_000, 100, 3_600_000);
  if (graceMs <= drainDelayMs) {
    throw new ConfigError(
      'SHUTDOWN_GRACE_MS',
      `must be longer than SHUTDOWN_DRAIN_DELAY_MS (${drainDelayMs}), got ${graceMs}`,
    );
  }
  return { drainDelayMs, graceMs };
}

function loadHttpLimits(env: NodeJS.ProcessEnv): HttpLimitsConfig {
  const headersTimeoutMs = int(env, 'HTTP_HEADERS_TIMEOUT_MS', 10_000, 100, 600_000);
  const requestTimeoutMs = int(env, 'HTTP_REQUEST_TIMEOUT_MS', 30_000, 100, 3_600_000);
  if (requestTimeoutMs < headersTimeoutMs) {
    // Node refuses a server whose header timeout exceeds its request timeout
    throw new ConfigError(
      'HTTP_REQUEST_TIMEOUT_MS',
      `must be at least HTTP_HEADERS_TIMEOUT_MS (${headersTimeoutMs}), got ${requestTimeoutMs}`,
    );
  }
  return {
    headersTimeoutMs,
    requestTimeoutMs,
    keepAliveTimeoutMs: int(env, 'HTTP_KEEP_ALIVE_TIMEOUT_MS', 72_000, 100, 3_600_000),
    bodyMaxDepth: int(env, 'BODY_MAX_DEPTH', 32, 2, 1_000),
    bodyMaxItems: int(env, 'BODY_MAX_ITEMS', 10_000, 1, 10_000_000),
  };
}

/** Loads `.env` (when present) into process.env, then validates. Used by main.ts only. */
export function loadConfigFromEnvironment(): AppConfig {
  if (existsSync('.env')) {
    loadDotenv({ path: '.env', quiet: true });
  }
  return loadConfig(process.env);
}
