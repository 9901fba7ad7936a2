import { AsyncLocalStorage } from 'node:async_hooks';
import { FastifyAdapter } from '@nestjs/platform-fastify';
import { Histogram, Registry } from 'prom-client';
import { DataSource } from 'typeorm';
import { afterAll, describe, expect, it } from 'vitest';
import {
  resolvedHistogramSeries,
  oidcProviderStorage,
  replaceClientSecretComparison,
  typeormPgPool,
  typeormSqliteConnection,
  wrapNestCorsHook,
  type CorsHook,
} from './library-internals.js';

/**
 * Each test reads a library the way src/common/library-internals.ts does: an upgrade that renames
 * or moves what it reads fails here (run this file after upgrading one of these libraries).
 */

describe('@nestjs/platform-fastify: the adapter keeps the CORS hook as corsHook', () => {
  it('wraps the hook app.enableCors() registered, and the wrapped hook is the one requests run', async () => {
    const adapter = new FastifyAdapter();
    adapter.enableCors({ origin: '*' });
    adapter.getInstance().get('/thing', () => ({ ok: true }));
    await adapter.getInstance().ready();
    let wrapped: CorsHook | undefined;
    wrapNestCorsHook(adapter, (hook) => {
      wrapped = hook;
      return (req, reply, done) => {
        void reply.header('X-Wrapped', 'yes');
        hook(req, reply, done);
      };
    });
    expect(typeof wrapped).toBe('function');
    const res = await adapter
      .getInstance()
      .inject({ method: 'GET', url: '/thing', headers: { origin: 'https://a.example' } });
    expect(res.headers['x-wrapped']).toBe('yes');
    expect(res.headers['access-control-allow-origin']).toBe('*');
    await adapter.close();
  });

  it('throws when CORS was never enabled (no hook to wrap)', async () => {
    const adapter = new FastifyAdapter();
    await adapter.getInstance().ready();
    expect(() => wrapNestCorsHook(adapter, (hook) => hook)).toThrow(/no corsHook/);
    await adapter.close();
  });
});

describe('typeorm: the better-sqlite3 driver keeps its Database as databaseConnection', () => {
  const dataSource = new DataSource({ type: 'better-sqlite3', database: ':memory:' });
  afterAll(async () => {
    if (dataSource.isInitialized) {
      await dataSource.destroy();
    }
  });

  it('throws before the data source is initialised, then gives the connection statements are prepared on', async () => {
    expect(() => typeormSqliteConnection(dataSource.driver)).toThrow(/no databaseConnection/);
    await dataSource.initialize();
    const db = typeormSqliteConnection<{ prepare(sql: string): { get(): unknown } }>(
      dataSource.driver,
    );
    expect(db.prepare('SELECT 41 + 1 AS answer').get()).toEqual({ answer: 42 });
  });
});

describe('typeorm: the PostgreSQL driver keeps its pg pool as master', () => {
  const url = process.env.DATABASE_URL;
  const postgres = url !== undefined && /^postgres(ql)?:/.test(url);

  it('has no pool before the data source is initialised', () => {
    const dataSource = new DataSource({
      type: 'postgres',
      url: 'postgres://nobody@127.0.0.1:1/none',
    });
    expect(typeormPgPool(dataSource.driver)).toBeUndefined();
  });

  it.skipIf(!postgres)(
    'gives the pg pool once initialised (needs DATABASE_URL=postgres://…: the PostgreSQL CI run)',
    async () => {
      const dataSource = new DataSource({ type: 'postgres', url });
      await dataSource.initialize();
      try {
        const pool = typeormPgPool<{
          totalCount: number;
          idleCount: number;
          options: { max?: number };
        }>(dataSource.driver);
        expect(pool).toBeDefined();
        expect(pool!.totalCount).toBeGreaterThanOrEqual(1);
        expect(typeof pool!.idleCount).toBe('number');
      } finally {
        await dataSource.destroy();
      }
    },
  );
});

describe('oidc-provider: its request context storage and client secret comparison', () => {
  it('finds the AsyncLocalStorage whose store Provider.ctx reads', async () => {
    const { default: Provider } = await import('oidc-provider');
    const storage = await oidcProviderStorage();
    expect(storage).toBeInstanceOf(AsyncLocalStorage);
    const sentinel = { request: 'sentinel' };
    expect(storage!.run(sentinel, () => Provider.ctx as unknown)).toBe(sentinel);
  });

  it("makes the provider's clients compare a presented secret with the stored one through our function", async () => {
    const { default: Provider } = await import('oidc-provider');
    const provider = new Provider('https://op.example', {
      clients: [
        {
          client_id: 'partner',
          client_secret: 'stored:letmein',
          redirect_uris: ['https://rp.example/cb'],
        },
      ],
    });
    const seen: [string | undefined, string][] = [];
    replaceClientSecretComparison(provider, (stored, presented) => {
      seen.push([stored, presented]);
      return stored === `stored:${presented}`;
    });
    const client = await provider.Client.find('partner');
    expect(client).toBeDefined();
    expect(await client!.compareClientSecret('letmein')).toBe(true);
    expect(await client!.compareClientSecret('stored:letmein')).toBe(false);
    expect(seen).toEqual([
      ['stored:letmein', 'letmein'],
      ['stored:letmein', 'stored:letmein'],
    ]);
  });
});

describe('prom-client: a histogram keeps each label set in hashMap, its bounds in upperBounds', () => {
  const histogramIn = (registry: Registry) =>
    new Histogram({
      name: 'atrium_test_seconds',
      help: 'test',
      labelNames: ['method', 'route', 'status'] as const,
      buckets: [0.001, 0.01, 0.1, 1],
      registers: [registry],
    });
  const values = [0.0005, 0.001, 0.004, 0.05, 0.2, 3, 0, 0.01, 7.5];

  it('a resolved series records what the labelled child records, reset included', async () => {
    const ours = new Registry();
    const theirs = new Registry();
    const resolved = histogramIn(ours);
    const plain = histogramIn(theirs);
    const labels = { method: 'GET', route: '/api/v1/users/:id', status: '200' };
    const observe = resolvedHistogramSeries(resolved, labels);
    const other = resolvedHistogramSeries(resolved, { ...labels, status: '404' });
    for (const v of values) {
      observe(v);
      plain.labels(labels).observe(v);
    }
    other(0.02);
    plain.labels({ ...labels, status: '404' }).observe(0.02);
    expect(await ours.metrics()).toBe(await theirs.metrics());
    expect(await ours.metrics()).toContain(
      'atrium_test_seconds_count{method="GET",route="/api/v1/users/:id",status="200"} 9',
    );

    resolved.reset();
    plain.reset();
    observe(0.3);
    observe(0.003);
    plain.labels(labels).observe(0.3);
    plain.labels(labels).observe(0.003);
    expect(await ours.metrics()).toBe(await theirs.metrics());
  });

  it('refuses a value that is not a number as prom-client does', () => {
    const observe = resolvedHistogramSeries(histogramIn(new Registry()), {
      method: 'GET',
      route: '/',
      status: '200',
    });
    observe(1);
    expect(() => observe(Number.NaN)).toThrow(/not a valid number/);
  });
});
