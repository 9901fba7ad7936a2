import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { createRequire } from 'node:module';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  freshDatabaseUrl,
  startApp,
  usingPostgres,
  usingRedis,
  type TestApp,
} from './helpers/app.js';
import { FaultProxy } from './helpers/fault-proxy.js';
import { adminClient, createUser } from './helpers/factories.js';
import type { Client } from './helpers/http.js';
import { eventually } from './helpers/webhook-receiver.js';

/**
 * The outcome of an attempt cannot be written when the receiver has answered (the database
 * connection dropped, or another connection holds the lock): the attempt must not be sent again,
 * and the delivery log's `attempts` must count the requests the receiver saw (docs/webhooks.md,
 * "Delivery, retries and ordering"). Each fault is made real: a PostgreSQL backend terminated while
 * it runs the outcome's write, a SQLite write lock held by another connection past the app's busy
 * timeout.
 */

/** The part of better-sqlite3 this test uses (the package ships no types). */
interface SqliteHandle {
  exec(sql: string): void;
  close(): void;
}
const Sqlite = createRequire(import.meta.url)('better-sqlite3') as new (
  path: string,
  options?: { timeout?: number },
) => SqliteHandle;

/**
 * The app's SQLite busy timeout is 5 s (src/database/database.options.ts): a write lock held longer
 * than that makes the app's write fail with SQLITE_BUSY instead of waiting.
 */
const SQLITE_LOCK_HOLD_MS = 6_000;

/**
 * A receiver that answers every request 200 after `fault(webhookId)` ran; what `fault` returns runs
 * once the answer is on its way. Records every request's webhook-id as it arrives.
 */
class FaultingReceiver {
  readonly seen: string[] = [];
  readonly errors: unknown[] = [];
  private server!: Server;

  constructor(
    private readonly fault: (webhookId: string) => Promise<(() => Promise<void>) | undefined>,
  ) {}

  async start(): Promise<this> {
    this.server = createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        const id = String(req.headers['webhook-id']);
        this.seen.push(id);
        void this.fault(id).then(
          (afterAnswer) => {
            res.writeHead(200).end();
            afterAnswer?.().catch((err: unknown) => this.errors.push(err));
          },
          (err: unknown) => {
            this.errors.push(err);
            res.writeHead(200).end();
          },
        );
      });
    });
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    return this;
  }

  url(): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/hook`;
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

interface LoggedDelivery {
  event_id: string;
  status: string;
  attempts: number;
}

/** Waits until the endpoint's log has `n` deliveries, all succeeded, and returns them. */
async function allSucceeded(admin: Client, endpointId: string, n: number) {
  return eventually(async () => {
    const res = await admin.get(`/api/v1/webhooks/${endpointId}/deliveries?limit=100`);
    const rows = res.status === 200 ? (res.body.data as LoggedDelivery[]) : [];
    return rows.length === n && rows.every((d) => d.status === 'succeeded') ? rows : undefined;
  }, 120_000);
}

/** What the receiver saw against what the log says, per event. */
function tally(seen: readonly string[], log: readonly LoggedDelivery[]) {
  const requests = new Map<string, number>();
  for (const id of seen) {
    requests.set(id, (requests.get(id) ?? 0) + 1);
  }
  return {
    events: log.length,
    requests: seen.length,
    duplicates: [...requests.values()].reduce((sum, n) => sum + n - 1, 0),
    attemptsNotMatchingRequests: log.filter((d) => d.attempts !== (requests.get(d.event_id) ?? 0))
      .length,
  };
}

const ENGINES = [
  { engine: 'in-process worker', env: { REDIS_URL: undefined } },
  ...(usingRedis ? [{ engine: 'BullMQ', env: {} }] : []),
];

describe.each(ENGINES)(
  'webhooks on SQLite ($engine): an outcome write refused by another connection’s write lock',
  ({ env }) => {
    let dir: string;
    let file: string;
    let t: TestApp;
    let admin: Client;
    let lock: SqliteHandle | undefined;
    let armed!: () => void;
    const arming = new Promise<void>((resolve) => (armed = resolve));
    let locks = 0;

    /** Takes the write lock (another statement of the app may hold it for a moment). */
    async function takeWriteLock(): Promise<void> {
      lock = new Sqlite(file, { timeout: 0 });
      for (;;) {
        try {
          lock.exec('BEGIN IMMEDIATE');
          return;
        } catch {
          await new Promise((r) => setTimeout(r, 5));
        }
      }
    }

    const receiver = new FaultingReceiver(async () => {
      // requests wait until every event is committed: the lock would fail the test's own writes
      await arming;
      if (locks === 0) {
        locks += 1;
        await takeWriteLock();
        setTimeout(() => {
          lock?.exec('ROLLBACK');
          lock?.close();
        }, SQLITE_LOCK_HOLD_MS);
      }
      return undefined;
    });

    beforeAll(async () => {
      dir = mkdtempSync(join(tmpdir(), 'atrium-outcome-faults-'));
      file = join(dir, 'app.sqlite');
      await receiver.start();
      t = await startApp({
        DATABASE_URL: `sqlite:${file}`,
        WEBHOOK_ALLOWED_HOSTS: '127.0.0.1',
        ...env,
      });
      admin = await adminClient(t.url);
    });

    afterAll(async () => {
      await t?.close();
      await receiver.close();
      rmSync(dir, { recursive: true, force: true });
    });

    it('sends each event once and logs the one attempt the receiver saw, the outcomes written after the lock', async () => {
      const endpoint = await admin.post('/api/v1/webhooks', {
        url: receiver.url(),
        events: ['user.created'],
      });
      expect(endpoint.status).toBe(201);
      for (let i = 0; i < 3; i += 1) {
        await createUser(t.url);
      }
      armed();
      const log = await allSucceeded(admin, endpoint.body.data.id, 3);
      expect(receiver.errors).toEqual([]);
      expect(locks).toBe(1);
      expect(tally(receiver.seen, log)).toEqual({
        events: 3,
        requests: 3,
        duplicates: 0,
        attemptsNotMatchingRequests: 0,
      });
    }, 150_000);
  },
);

describe.runIf(usingPostgres).each(ENGINES)(
  'webhooks on PostgreSQL ($engine): the outcome write’s connection terminated as the receiver answers',
  ({ env }) => {
    const EVENTS = 10;
    let t: TestApp;
    let admin: Client;
    let db: pg.Client;
    let applicationName: string;
    let connect: () => Promise<pg.Client>;
    let terminated = 0;

    /** Polls for the app's backend that waits on a lock `holder` holds (the outcome's write). */
    async function blockedBy(holder: pg.Client): Promise<number> {
      const { rows: me } = await holder.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
      // the events' faults come one after the other: each kills the batch the writer then retries,
      // up to 2 s later once it failed a few times in a row
      const deadline = Date.now() + 90_000;
      for (;;) {
        const { rows } = await db.query<{ pid: number }>(
          `SELECT pid FROM pg_stat_activity
            WHERE application_name = $1 AND $2 = ANY(pg_blocking_pids(pid))`,
          [applicationName, me[0].pid],
        );
        if (rows[0]) {
          return rows[0].pid;
        }
        if (Date.now() > deadline) {
          throw new Error('no backend of the app waited on the delivery row');
        }
        await new Promise((r) => setTimeout(r, 10));
      }
    }

    const faulted = new Set<string>();
    const receiver = new FaultingReceiver(async (webhookId) => {
      // the first request of each event only: a request sent again is answered as it comes
      if (faulted.has(webhookId)) {
        return undefined;
      }
      faulted.add(webhookId);
      // the row is locked before the answer: the outcome's write waits on it, and its connection
      // is terminated while it does (each request with a connection of its own: none waits for
      // another's fault)
      const holder = await connect();
      try {
        await holder.query('BEGIN');
        await holder.query('SELECT id FROM webhook_deliveries WHERE event_id = $1 FOR UPDATE', [
          webhookId,
        ]);
      } catch (err) {
        await holder.end();
        throw err;
      }
      return async () => {
        try {
          const pid = await blockedBy(holder);
          await db.query('SELECT pg_terminate_backend($1)', [pid]);
          terminated += 1;
        } finally {
          await holder.end();
        }
      };
    });

    beforeAll(async () => {
      await receiver.start();
      t = await startApp({ WEBHOOK_ALLOWED_HOSTS: '127.0.0.1', ...env });
      const database = t.config.database;
      if (database.type !== 'postgres' || !database.schema) {
        throw new Error('expected a PostgreSQL schema');
      }
      applicationName = `atrium/${database.schema}`;
      connect = async () => {
        const client = new pg.Client({
          connectionString: database.url,
          options: `-c search_path=${database.schema}`,
        });
        await client.connect();
        return client;
      };
      db = await connect();
      admin = await adminClient(t.url);
    });

    afterAll(async () => {
      await t?.close();
      await db?.end();
      await receiver.close();
    });

    it('sends each event once and logs the one attempt the receiver saw, each outcome written on a new connection', async () => {
      const endpoint = await admin.post('/api/v1/webhooks', {
        url: receiver.url(),
        events: ['user.created'],
      });
      expect(endpoint.status).toBe(201);
      for (let i = 0; i < EVENTS; i += 1) {
        await createUser(t.url);
      }
      const log = await allSucceeded(admin, endpoint.body.data.id, EVENTS);
      expect(receiver.errors).toEqual([]);
      expect(terminated).toBe(EVENTS);
      expect(tally(receiver.seen, log)).toEqual({
        events: EVENTS,
        requests: EVENTS,
        duplicates: 0,
        attemptsNotMatchingRequests: 0,
      });
    }, 180_000);
  },
);

describe.runIf(usingPostgres).each(ENGINES)(
  'webhooks on PostgreSQL ($engine): the database paused by a TCP proxy as the receiver answers',
  ({ env }) => {
    const QUERY_TIMEOUT_MS = 1_000;
    /**
     * Longer than a statement may wait for its answer (DATABASE_QUERY_TIMEOUT_MS): the outcome's
     * write times out during the pause and its connection is closed, as are the writer's retries.
     */
    const PAUSE_MS = 3 * QUERY_TIMEOUT_MS;
    let proxy: FaultProxy;
    let t: TestApp;
    let admin: Client;
    let armed!: () => void;
    const arming = new Promise<void>((resolve) => (armed = resolve));
    let pauses = 0;

    const receiver = new FaultingReceiver(async () => {
      // requests wait until every event is committed: the pause would fail the test's own writes
      await arming;
      if (pauses === 0) {
        pauses += 1;
        proxy.pause();
        setTimeout(() => proxy.resume(), PAUSE_MS);
      }
      return undefined;
    });

    beforeAll(async () => {
      await receiver.start();
      const target = new URL(process.env.DATABASE_URL!);
      proxy = await FaultProxy.start({ host: target.hostname, port: Number(target.port || 5432) });
      t = await startApp({
        DATABASE_URL: proxy.rewrite(freshDatabaseUrl()),
        DATABASE_QUERY_TIMEOUT_MS: String(QUERY_TIMEOUT_MS),
        DATABASE_CONNECT_TIMEOUT_MS: String(QUERY_TIMEOUT_MS),
        WEBHOOK_ALLOWED_HOSTS: '127.0.0.1',
        ...env,
      });
      admin = await adminClient(t.url);
    });

    afterAll(async () => {
      await t?.close();
      await proxy?.close();
      await receiver.close();
    });

    it('sends each event once and logs the one attempt the receiver saw, the outcomes written after the pause', async () => {
      const endpoint = await admin.post('/api/v1/webhooks', {
        url: receiver.url(),
        events: ['user.created'],
      });
      expect(endpoint.status).toBe(201);
      for (let i = 0; i < 3; i += 1) {
        await createUser(t.url);
      }
      armed();
      const log = await allSucceeded(admin, endpoint.body.data.id, 3);
      expect(receiver.errors).toEqual([]);
      expect(pauses).toBe(1);
      expect(tally(receiver.seen, log)).toEqual({
        events: 3,
        requests: 3,
        duplicates: 0,
        attemptsNotMatchingRequests: 0,
      });
    }, 150_000);
  },
);
