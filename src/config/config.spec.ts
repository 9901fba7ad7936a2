import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from './config.js';

describe('loadConfig', () => {
  it('applies the documented defaults', () => {
    const c = loadConfig({});
    expect(c).toMatchObject({
      port: 3000,
      publicUrl: 'http://localhost:3000',
      database: { type: 'sqlite', path: 'data/atrium.sqlite' },
      redisUrl: undefined,
      redisCommandTimeoutMs: 100,
      rateLimit: 300,
      rateLimitWindowS: 60,
      authRateLimit: 10,
      logLevel: 'info',
      corsOrigins: [
        'https://studio.apollographql.com',
        'http://localhost:*',
        'http://127.0.0.1:*',
        'http://[::1]:*',
      ],
      passwordHashProfile: 'owasp',
    });
  });

  it('accepts the cheap password hash profile with NODE_ENV=test only', () => {
    expect(
      loadConfig({ NODE_ENV: 'test', PASSWORD_HASH_PROFILE: 'test' }).passwordHashProfile,
    ).toBe('test');
    for (const NODE_ENV of ['production', 'development', undefined]) {
      expect(() => loadConfig({ NODE_ENV, PASSWORD_HASH_PROFILE: 'test' })).toThrow(
        /^Invalid configuration: PASSWORD_HASH_PROFILE test is accepted only with NODE_ENV=test$/,
      );
    }
    expect(loadConfig({ NODE_ENV: 'production', PASSWORD_HASH_PROFILE: 'owasp' })).toMatchObject({
      passwordHashProfile: 'owasp',
    });
  });

  it('parses PostgreSQL URLs and an optional schema', () => {
    const c = loadConfig({ DATABASE_URL: 'postgres://u@h:5432/db?schema=atrium_x' });
    expect(c.database).toEqual({
      type: 'postgres',
      url: 'postgres://u@h:5432/db',
      schema: 'atrium_x',
      connectTimeoutMs: 5_000,
      queryTimeoutMs: 10_000,
    });
    const tuned = loadConfig({
      DATABASE_URL: 'postgres://u@h:5432/db',
      DATABASE_CONNECT_TIMEOUT_MS: '1500',
      DATABASE_QUERY_TIMEOUT_MS: '20000',
    });
    expect(tuned.database).toMatchObject({ connectTimeoutMs: 1_500, queryTimeoutMs: 20_000 });
  });

  it('keeps /metrics on the main port and replays idempotency keys for a day unless told otherwise', () => {
    expect(loadConfig({})).toMatchObject({ metricsPort: undefined, idempotencyTtlS: 86_400 });
    expect(loadConfig({ METRICS_PORT: '9464', IDEMPOTENCY_TTL_S: '60' })).toMatchObject({
      metricsPort: 9464,
      idempotencyTtlS: 60,
    });
    expect(() => loadConfig({ PORT: '3000', METRICS_PORT: '3000' })).toThrow(
      /^Invalid configuration: METRICS_PORT must differ from PORT/,
    );
    expect(() => loadConfig({ IDEMPOTENCY_TTL_S: '0' })).toThrow(
      /^Invalid configuration: IDEMPOTENCY_TTL_S must be between/,
    );
  });

  it('treats empty values as unset', () => {
    const c = loadConfig({
      PORT: '',
      REDIS_URL: '',
      ADMIN_EMAIL: '',
      ADMIN_PASSWORD: '',
      JWT_PRIVATE_KEY: '',
    });
    expect(c.port).toBe(3000);
    expect(c.redisUrl).toBeUndefined();
    expect(c.adminEmail).toBeUndefined();
  });

  it.each([
    [{ PORT: '70000' }, 'PORT'],
    [{ PORT: '-1' }, 'PORT'],
    [{ DATABASE_URL: 'sqlite:' }, 'DATABASE_URL'],
    [{ REDIS_URL: 'http://x' }, 'REDIS_URL'],
    [{ PUBLIC_URL: 'ftp://x' }, 'PUBLIC_URL'],
    [{ ADMIN_EMAIL: 'a@b.co' }, 'ADMIN_PASSWORD'],
    [{ ADMIN_EMAIL: 'nope', ADMIN_PASSWORD: 'long-enough-password' }, 'ADMIN_EMAIL'],
    [{ JWT_PRIVATE_KEY: 'secret' }, 'JWT_PRIVATE_KEY'],
    [{ RATE_LIMIT: '0' }, 'RATE_LIMIT'],
    [{ GRAPHQL_INTROSPECTION: 'maybe' }, 'GRAPHQL_INTROSPECTION'],
    [{ NODE_ENV: 'staging' }, 'NODE_ENV'],
    [{ NODE_ENV: 'test', PASSWORD_HASH_PROFILE: 'weak' }, 'PASSWORD_HASH_PROFILE'],
    [{ REDIS_COMMAND_TIMEOUT_MS: '5' }, 'REDIS_COMMAND_TIMEOUT_MS'],
  ])('rejects %o naming %s', (env, name) => {
    expect(() => loadConfig(env)).toThrow(ConfigError);
    expect(() => loadConfig(env)).toThrow(new RegExp(`^Invalid configuration: ${name} `));
  });
});
