import { AsyncLocalStorage } from 'node:async_hooks';
import type { FastifyAdapter } from '@nestjs/platform-fastify';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type Provider from 'oidc-provider';
import type { Histogram } from 'prom-client';
import type { Driver } from 'typeorm';

/**
 * Every place where Atrium reaches past a library's public API, in one module: a private field of
 * a class, an undeclared member of a driver, a file the package does not publish. Nothing else in
 * src/ does (`npm run lint:deps` refuses deep imports of library files outside this module, ESLint
 * refuses computed imports). Each reach-in has a reason (the line above it), a check at boot or a
 * safe fallback, and a test in library-internals.spec.ts that fails when an upgrade moves what it
 * reads: run `npx vitest run src/common/library-internals.spec.ts` after upgrading
 * @nestjs/platform-fastify, typeorm, pg, oidc-provider or prom-client.
 */

// ---- @nestjs/platform-fastify ------------------------------------------------------------------

/** The request hook of @fastify/cors as Nest's Fastify adapter keeps it. */
export type CorsHook = (
  req: FastifyRequest,
  reply: FastifyReply,
  done: (err?: Error) => void,
) => void;

/**
 * Replaces the hook `app.enableCors()` registered (the adapter's private `corsHook`, which its own
 * `onRequest` hook calls) by `wrap(hook)`. Throws when there is none: CORS not enabled, or an
 * upgrade renamed the field (every boot then fails, rather than the wrap silently doing nothing).
 * Used by src/http/cors.ts (requests without `Origin` skip @fastify/cors, docs/performance.md).
 */
export function wrapNestCorsHook(
  adapter: FastifyAdapter,
  wrap: (hook: CorsHook) => CorsHook,
): void {
  const holder = adapter as unknown as { corsHook?: CorsHook };
  const hook = holder.corsHook;
  if (typeof hook !== 'function') {
    throw new Error(
      'wrapNestCorsHook: the Fastify adapter has no corsHook (was app.enableCors() called, ' +
        'or did @nestjs/platform-fastify change?)',
    );
  }
  holder.corsHook = wrap(hook);
}

// ---- TypeORM drivers ---------------------------------------------------------------------------

/**
 * The pg pool of TypeORM's PostgreSQL driver (`PostgresDriver.master`, a member its `Driver`
 * interface does not declare), for the pool gauges of /metrics. Undefined before the data source
 * is initialised or on another driver.
 */
export function typeormPgPool<Pool>(driver: Driver): Pool | undefined {
  return (driver as unknown as { master?: Pool }).master;
}

/**
 * The better-sqlite3 `Database` of TypeORM's better-sqlite3 driver (`databaseConnection`, not in
 * the `Driver` interface): DatabaseService prepares its cached statements on it, in raw mode.
 * Throws when the driver has none, so that a rename fails the first statement loudly.
 */
export function typeormSqliteConnection<Connection>(driver: Driver): Connection {
  const connection = (driver as unknown as { databaseConnection?: Connection }).databaseConnection;
  if (connection === undefined || connection === null) {
    throw new Error(
      'typeormSqliteConnection: the TypeORM driver has no databaseConnection (not initialised, ' +
        'not better-sqlite3, or did typeorm change?)',
    );
  }
  return connection;
}

// ---- oidc-provider -----------------------------------------------------------------------------

/**
 * oidc-provider's AsyncLocalStorage (`lib/helpers/als.js`, the store `Provider.ctx` reads; the
 * package publishes no way to reach the storage itself): src/auth/oauth/oidc-library.ts disables
 * it between provider requests where it runs on promise hooks. Null when the file is gone or holds
 * something else: then there is nothing to release and requests run as they would without it.
 */
export async function oidcProviderStorage(): Promise<AsyncLocalStorage<unknown> | null> {
  try {
    // @ts-expect-error: a private file of the package, without type declarations
    const loaded = (await import('oidc-provider/lib/helpers/als.js')) as { default?: unknown };
    return loaded.default instanceof AsyncLocalStorage ? loaded.default : null;
  } catch {
    return null;
  }
}

/**
 * Makes the provider's clients compare a presented secret with `compare(stored, presented)`
 * instead of comparing it with the stored `client_secret` as plain text (Atrium stores SHA-256
 * hashes, docs/oauth.md). `Client#compareClientSecret` and `clientSecret` are public and typed,
 * but the provider offers no option for the comparison: the only way to change it is the
 * prototype of the `Client` class each provider builds for itself.
 */
export function replaceClientSecretComparison(
  provider: Provider,
  compare: (stored: string | undefined, presented: string) => boolean,
): void {
  provider.Client.prototype.compareClientSecret = function compareClientSecret(presented: string) {
    return compare(this.clientSecret, presented);
  };
}

// ---- prom-client -------------------------------------------------------------------------------

/** prom-client's record of one label set of a histogram (`Histogram#hashMap` values). */
interface HistogramValues {
  labels: Record<string, string>;
  bucketValues: Record<number, number>;
  sum: number;
  count: number;
}

interface HistogramInternals {
  hashMap: Record<string, HistogramValues>;
  upperBounds: number[];
}

/**
 * `observe(seconds)` of one label set of `histogram`, resolved once: prom-client's labelled child
 * validates and hashes the labels on every observation (~3 % of a REST GET). The first observation
 * goes through the public child, which creates prom-client's record of the label set; later ones
 * add to that record as prom-client's own `observe` does (sum, count, the first bucket whose bound
 * holds the value). A `reset()` of the histogram (a new record map) is noticed and the label set
 * resolved again. Throws when the histogram has no `hashMap`/`upperBounds` (a changed prom-client).
 */
export function resolvedHistogramSeries(
  histogram: Histogram<string>,
  labels: Record<string, string>,
): (value: number) => void {
  const internals = histogram as unknown as HistogramInternals;
  if (typeof internals.hashMap !== 'object' || !Array.isArray(internals.upperBounds)) {
    throw new Error(
      'resolvedHistogramSeries: prom-client Histogram has no hashMap/upperBounds (did prom-client change?)',
    );
  }
  const child = histogram.labels(labels);
  const bounds = internals.upperBounds;
  let map: HistogramInternals['hashMap'] | undefined;
  let values: HistogramValues | undefined;
  const names = Object.keys(labels);
  return (value: number) => {
    if (values === undefined || map !== internals.hashMap || !Number.isFinite(value)) {
      child.observe(value);
      map = internals.hashMap;
      values = Object.values(map).find((v) => names.every((n) => v.labels[n] === labels[n]));
      return;
    }
    values.sum += value;
    values.count += 1;
    for (let i = 0; i < bounds.length; i++) {
      if (value <= bounds[i]) {
        values.bucketValues[bounds[i]] += 1;
        break;
      }
    }
  };
}
