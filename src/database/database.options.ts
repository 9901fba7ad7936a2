import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import type { DataSourceOptions } from 'typeorm';
import type { DatabaseConfig } from '../config/config.js';
import { ClosingOnTimeoutClient } from './pg-client.js';
import { InitialSchema1763700000000 } from './migrations/1763700000000-initial-schema.js';
import { MessageSequence1763800000000 } from './migrations/1763800000000-message-sequence.js';
import { SessionIntegrity1763900000000 } from './migrations/1763900000000-session-integrity.js';
import { OAuth1763950000000 } from './migrations/1763950000000-oauth.js';
import { SLOW_QUERY_MS, TypeOrmLogger } from './typeorm-logger.js';
import { ListCounts1764000000000 } from './migrations/1764000000000-list-counts.js';
import { ListIndexes1764000000001 } from './migrations/1764000000001-list-indexes.js';
import { IdempotencyKeys1764100000000 } from './migrations/1764100000000-idempotency-keys.js';
import { SearchIndex1764300000019 } from './migrations/1764300000019-search-index.js';
import { IdempotencyCallerRights1764300000024 } from './migrations/1764300000024-idempotency-caller-rights.js';
import { PartnerApps1764400000021 } from './migrations/1764400000021-partner-apps.js';
import { Webhooks1764400000022 } from './migrations/1764400000022-webhooks.js';
import { AdminDashboards1764400000024 } from './migrations/1764400000024-admin-dashboards.js';
import { OrdersRangeCovering1764400000030 } from './migrations/1764400000030-orders-range-covering.js';
import { OrderRangeCounts1764500000000 } from './migrations/1764500000000-order-range-counts.js';
import { AuditCounts1764500000001 } from './migrations/1764500000001-audit-counts.js';
import { SearchIndexWhole1764600000010 } from './migrations/1764600000010-search-index-whole.js';
import { DeprecationUsage1764700000000 } from './migrations/1764700000000-deprecation-usage.js';
import { GraphqlTrustedDocuments1764900000000 } from './migrations/1764900000000-graphql-trusted-documents.js';
import { WebhookEventTraceparent1764800000035 } from './migrations/1764800000035-webhook-event-traceparent.js';

const MIGRATIONS = [
  InitialSchema1763700000000,
  MessageSequence1763800000000,
  SessionIntegrity1763900000000,
  OAuth1763950000000,
  ListCounts1764000000000,
  ListIndexes1764000000001,
  IdempotencyKeys1764100000000,
  SearchIndex1764300000019,
  IdempotencyCallerRights1764300000024,
  PartnerApps1764400000021,
  Webhooks1764400000022,
  AdminDashboards1764400000024,
  OrdersRangeCovering1764400000030,
  OrderRangeCounts1764500000000,
  AuditCounts1764500000001,
  SearchIndexWhole1764600000010,
  DeprecationUsage1764700000000,
  WebhookEventTraceparent1764800000035,
  GraphqlTrustedDocuments1764900000000,
];

/** TypeORM options for the configured database; migrations run at boot, never `synchronize`. */
export function dataSourceOptions(db: DatabaseConfig): DataSourceOptions {
  if (db.type === 'sqlite') {
    if (db.path !== ':memory:') {
      mkdirSync(dirname(db.path), { recursive: true });
    }
    return {
      type: 'better-sqlite3',
      database: db.path,
      migrations: MIGRATIONS,
      migrationsRun: true,
      synchronize: false,
      logger: new TypeOrmLogger(),
      maxQueryExecutionTime: SLOW_QUERY_MS,
      statementCacheSize: 200,
      prepareDatabase: (conn: { pragma: (s: string) => unknown }) => {
        if (db.path !== ':memory:') {
          conn.pragma('journal_mode = WAL');
        }
        conn.pragma('foreign_keys = ON');
        conn.pragma('busy_timeout = 5000');
      },
    };
  }
  return {
    type: 'postgres',
    url: db.url,
    migrations: MIGRATIONS,
    migrationsRun: true,
    synchronize: false,
    logger: new TypeOrmLogger(),
    maxQueryExecutionTime: SLOW_QUERY_MS,
    // names the app's backends in pg_stat_activity (per test schema, so a test can find its own)
    applicationName: db.schema ? `atrium/${db.schema}` : 'atrium',
    // bounded waits, so that a hung or unreachable server is a quick 503 (docs/data-integrity.md):
    // for a pooled connection (pg-pool's connectionTimeoutMillis) and for each statement's answer
    connectTimeoutMS: db.connectTimeoutMs,
    extra: {
      max: 10,
      query_timeout: db.queryTimeoutMs,
      Client: ClosingOnTimeoutClient,
      // a schema per test suite keeps suites apart on one database (see test/helpers/app.ts)
      ...(db.schema ? { options: `-c search_path=${db.schema}` } : {}),
    },
  };
}
