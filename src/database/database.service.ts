import { AsyncLocalStorage } from 'node:async_hooks';
import { Inject, Injectable, Logger, Optional } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, EntityManager, QueryFailedError, type QueryRunner } from 'typeorm';
import { typeormPgPool, typeormSqliteConnection } from '../common/library-internals.js';
import { StorageRelease } from '../common/storage-release.js';
import { APP_CONFIG, type AppConfig } from '../config/config.js';
import { MetricsService, type PoolUsage } from '../metrics/metrics.service.js';
import { rowObjects } from './sqlite-rows.js';
import { SqliteStatementCache, type SqliteConnection } from './sqlite-statements.js';
import { queryTimer } from './query-timer.js';
import { sqliteStatementSpans } from './statement-spans.js';
import { endSqlSpan, startSqliteSpan, tracingEnabled } from '../telemetry/tracing.js';

type AfterCommit = () => void | Promise<void>;

export interface TxContext {
  manager: EntityManager;
  /** Runs `fn` once the transaction has committed (events are published only then). */
  afterCommit(fn: AfterCommit): void;
  /** Runs `fn` inside the transaction after its work, just before the commit (counter flushes). */
  beforeCommit(fn: AfterCommit): void;
}

type QueryFn = (...args: unknown[]) => Promise<unknown>;

/** Thrown out of a dry run's transaction to roll it back, carrying the work's result. */
class DryRunRollback extends Error {
  constructor(readonly value: unknown) {
    super('dry run: rolled back');
  }
}

/**
 * What a request that holds its first transaction open (an `Idempotency-Key` POST,
 * docs/idempotency.md) does at the ends of that transaction.
 */
export interface RequestHold {
  /** Runs first in the held transaction; throwing rolls it back and fails the handler's call. */
  begin(tx: TxContext): Promise<void>;
  /** Runs last, once the request is answered; throwing rolls the request's change back. */
  end(tx: TxContext): Promise<void>;
}

/** How a held request's transaction ended: committed, or none was held (none ran, or it failed). */
export type HeldOutcome = 'committed' | 'none';

interface HeldTransaction {
  hold: RequestHold;
  tx?: TxContext;
  /** The handler's statements and transactions run in `tx` while this is true. */
  open: boolean;
  /** A held transaction was opened and is not over (its work may still fail). */
  started: boolean;
  /** Of the held transaction whose work succeeded: settles with its commit. */
  outcome?: Promise<HeldOutcome>;
}

/** A statement that only reads (the dry-run guard of `query`). */
const READ_ONLY = /^\s*(SELECT|WITH|VALUES|SHOW|EXPLAIN)\b/i;

/** The part of pg's Pool the pool gauges read. */
interface PgPool {
  totalCount: number;
  idleCount: number;
  waitingCount: number;
  options: { max?: number };
}

/**
 * The one door for writes. On PostgreSQL each transaction gets its own pooled connection.
 *
 * On SQLite every caller shares one connection, and whatever runs on it while a transaction is open
 * runs inside that transaction: a read would see its uncommitted rows, and a write would commit or
 * roll back with it. So on SQLite (docs/data-integrity.md):
 * - transactions are queued one at a time, and run on a query runner of their own (same
 *   connection, separate TypeORM runner object), so their statements can be told apart;
 * - while one is open, every other statement waits until it has committed or rolled back: the raw
 *   fast path below and TypeORM's shared runner (repositories, `dataSource.query`) alike;
 * - a transaction begins only once the outside statements already running have finished.
 * Inside a transaction, use `tx.manager`, never `db.query`: on SQLite that would wait for the
 * transaction it is part of (and on PostgreSQL it would run on another connection).
 */
@Injectable()
export class DatabaseService {
  private readonly logger = new Logger(DatabaseService.name);
  private tail: Promise<unknown> = Promise.resolve();
  /** SQLite: the transactions' own runner and manager, and whether a transaction is open. */
  private txManager: EntityManager | undefined;
  private txOpen = false;
  private txClosed: Promise<void> = Promise.resolve();
  /** SQLite: statements from outside any transaction that are running through TypeORM's runner. */
  private outsideInFlight = 0;
  private outsideDrained: (() => void) | null = null;
  private statements: SqliteStatementCache | undefined;
  /** SQLite: transactions queued behind the open one, and statements waiting for it to close. */
  private txQueued = 0;
  private statementsWaiting = 0;
  /** Set while `dryRun` work runs: its transactions roll back instead of committing. */
  private readonly dryRuns = new AsyncLocalStorage<true>();
  private readonly dryRunRelease = new StorageRelease(this.dryRuns);
  /** Set while a request's handler runs with a held transaction (`runHeld`). */
  private readonly held = new AsyncLocalStorage<HeldTransaction>();
  private readonly heldRelease = new StorageRelease(this.held);
  readonly dialect: 'sqlite' | 'postgres';
  /** SQLite: `query` runs cached prepared statements itself (SQLITE_STATEMENT_CACHE, default on). */
  private readonly statementCache: boolean;

  constructor(
    @InjectDataSource() readonly dataSource: DataSource,
    @Optional() private readonly metrics?: MetricsService,
    @Optional() @Inject(APP_CONFIG) config?: AppConfig,
  ) {
    this.dialect = dataSource.options.type === 'postgres' ? 'postgres' : 'sqlite';
    this.statementCache = config?.sqliteStatementCache ?? true;
    if (this.dialect === 'sqlite') {
      this.gateTypeormRunner();
      // PostgreSQL's statements are traced by the `pg` instrumentation (docs/operations.md)
      if (tracingEnabled()) {
        this.dataSource.subscribers.push(sqliteStatementSpans());
      }
    }
    if (metrics) {
      this.instrument(metrics);
    }
  }

  /**
   * Statement durations (`atrium_db_query_duration_seconds`) of everything TypeORM runs, from its
   * before/after-query events (the SQLite fast path in `query` times itself), and the pool gauges.
   */
  private instrument(metrics: MetricsService): void {
    this.dataSource.subscribers.push(queryTimer(metrics));
    metrics.setPoolReader(() => this.poolUsage());
  }

  /**
   * PostgreSQL: pg's pool (connections in use and idle, requests waiting for one). SQLite: one
   * connection, in use while a transaction is open or a statement runs through TypeORM; waiting are
   * the transactions queued behind the open one and the statements held until it closes.
   */
  private poolUsage(): PoolUsage | undefined {
    if (this.dialect === 'postgres') {
      const pool = typeormPgPool<PgPool>(this.dataSource.driver);
      return pool
        ? {
            inUse: pool.totalCount - pool.idleCount,
            idle: pool.idleCount,
            waiting: pool.waitingCount,
            max: pool.options.max ?? 10,
          }
        : undefined;
    }
    const inUse = this.txOpen || this.outsideInFlight > 0 ? 1 : 0;
    return { inUse, idle: 1 - inUse, waiting: this.txQueued + this.statementsWaiting, max: 1 };
  }

  private async waitForOpenTransaction(): Promise<void> {
    if (!this.txOpen) {
      return;
    }
    this.statementsWaiting += 1;
    try {
      while (this.txOpen) {
        await this.txClosed;
      }
    } finally {
      this.statementsWaiting -= 1;
    }
  }

  /**
   * better-sqlite3's TypeORM driver hands the same query runner to everyone (`createQueryRunner`),
   * so gating its `query` covers repositories, query builders and `dataSource.query` (health
   * checks). Transactions get a second runner on the same connection, which is not gated.
   */
  private gateTypeormRunner(): void {
    const shared = this.dataSource.driver.createQueryRunner('master');
    const Runner = shared.constructor as new (driver: unknown) => QueryRunner;
    const txRunner = new Runner(this.dataSource.driver);
    this.txManager = this.dataSource.createEntityManager(txRunner);
    Object.assign(txRunner, { manager: this.txManager });

    const gated = shared as unknown as { query: QueryFn };
    const original: QueryFn = gated.query.bind(shared);
    gated.query = async (...args: unknown[]) => {
      if (!this.insideHeld()) {
        await this.waitForOpenTransaction();
      }
      // counted in the same tick as the check, so a transaction cannot begin before this statement ran
      this.outsideInFlight += 1;
      try {
        return await original(...args);
      } finally {
        this.outsideInFlight -= 1;
        if (this.outsideInFlight === 0) {
          this.outsideDrained?.();
        }
      }
    };
  }

  /** Positional parameter placeholder n (1-based) for raw SQL on this dialect. */
  p(n: number): string {
    return this.dialect === 'postgres' ? `$${n}` : '?';
  }

  /**
   * Raw SQL on the hot paths (no query building). On SQLite it runs a cached prepared statement on
   * TypeORM's own better-sqlite3 connection directly: TypeORM's query runner (broadcaster, result
   * objects, async statement cache) cost ~20 µs per statement, 13% of a GET (docs/performance.md).
   * The statement still goes through TypeORM's logger (query logging, the tests' statement counts)
   * and fails with TypeORM's QueryFailedError, as `dataSource.query` would.
   * SQLITE_STATEMENT_CACHE=false (CI's Node 24 run) takes TypeORM's path on SQLite too.
   */
  async query<T>(sql: string, params: unknown[] = []): Promise<T[]> {
    if (this.dryRuns.getStore() && !READ_ONLY.test(sql)) {
      // a write outside a transaction could not be rolled back: refuse it rather than commit it
      throw new Error('a dry run may write only inside db.transaction');
    }
    const held = this.openHeld();
    if (this.dialect === 'postgres') {
      // inside a held transaction a read must see that transaction's own writes: its connection
      return held
        ? held.tx!.manager.query<T[]>(sql, params)
        : this.dataSource.query<T[]>(sql, params);
    }
    if (!this.statementCache) {
      // TypeORM's SQLite runner answers a write with its last row id: writes answer no rows here
      const raw: unknown = await this.dataSource.query(sql, params);
      return Array.isArray(raw) ? (raw as T[]) : [];
    }
    // better-sqlite3 cannot bind booleans (TypeORM converts them the same way)
    const values = params.map((v) => (typeof v === 'boolean' ? Number(v) : v));
    if (this.txOpen && !held) {
      await this.waitForOpenTransaction();
    }
    // from here on synchronous: nothing else can run on the connection until the statement is done
    this.dataSource.logger.logQuery(sql, values);
    const started = performance.now();
    const span = startSqliteSpan(sql);
    try {
      this.statements ??= new SqliteStatementCache(
        typeormSqliteConnection<SqliteConnection>(this.dataSource.driver),
      );
      const { statement, columns } = this.statements.get(sql);
      let rows: T[] = [];
      if (columns !== undefined) {
        rows = rowObjects(statement.all(...values), columns) as T[];
      } else {
        statement.run(...values);
      }
      this.metrics?.recordQuery((performance.now() - started) / 1000, true);
      endSqlSpan(span);
      return rows;
    } catch (err) {
      this.metrics?.recordQuery((performance.now() - started) / 1000, false);
      endSqlSpan(span, err);
      throw new QueryFailedError(sql, values, err as Error);
    }
  }

  /**
   * Runs `work` (a request handler) so that every transaction it opens does all its work and then
   * rolls back instead of committing; after-commit callbacks (events) are dropped and a write
   * outside a transaction throws. An idempotent replay to a caller whose rights changed runs the
   * request this way to learn what a fresh request would answer (docs/idempotency.md).
   */
  dryRun<T>(work: () => Promise<T>): Promise<T> {
    return this.dryRunRelease.around(() => this.dryRuns.run(true, work));
  }

  /** The held transaction the current request's handler runs in, while it is open. */
  private openHeld(): HeldTransaction | undefined {
    const held = this.held.getStore();
    return held?.open ? held : undefined;
  }

  private insideHeld(): boolean {
    return this.openHeld() !== undefined;
  }

  /**
   * Runs `fn` (a request's handler) so that the first transaction it opens is held open after its
   * work until `hold.end` has run: the handler's later statements and transactions run inside it
   * (`query` on its connection, `transaction` as a savepoint), and `hold.end` writes last. So the
   * handler's change and what `hold.end` writes (its answer) commit together or not at all.
   * `outcome()` settles once that transaction is over: 'committed', 'none' when no transaction was
   * held (none opened, or its work failed), or rejects when it did not commit.
   * On SQLite the held transaction is the open one: other requests' statements wait for it.
   */
  runHeld<R>(
    hold: RequestHold,
    fn: () => Promise<R>,
  ): { result: Promise<R>; outcome(): Promise<HeldOutcome> } {
    const held: HeldTransaction = { hold, open: false, started: false };
    const result = this.heldRelease.around(() => this.held.run(held, fn));
    return { result, outcome: () => held.outcome ?? Promise.resolve('none') };
  }

  /** Runs `fn` outside any held transaction of the current request. */
  outsideHeld<R>(fn: () => R): R {
    return this.held.getStore() ? this.held.exit(fn) : fn();
  }

  /** The first transaction of a held request: `work` in a savepoint of a transaction kept open. */
  private openHeldTransaction<T>(
    held: HeldTransaction,
    work: (tx: TxContext) => Promise<T>,
  ): Promise<T> {
    held.started = true;
    return new Promise<T>((resolve, reject) => {
      let worked = false;
      const transaction = this.plainTransaction(async (tx) => {
        held.tx = tx;
        held.open = true;
        try {
          await held.hold.begin(tx);
          const value = await this.join(held, work);
          worked = true;
          resolve(value);
        } catch (err) {
          held.open = false;
          held.started = false;
          held.tx = undefined;
          reject(err instanceof Error ? err : new Error(String(err)));
          throw err;
        }
        try {
          await held.hold.end(tx);
        } finally {
          held.open = false;
        }
      });
      held.outcome = transaction.then(
        () => 'committed' as const,
        (err: unknown) => {
          if (!worked) {
            // the transaction failed before its work ran (no connection, BEGIN failed): the
            // handler's call fails with it (a second reject after the work's own is a no-op)
            held.started = false;
            reject(err instanceof Error ? err : new Error(String(err)));
            return 'none' as const;
          }
          throw err;
        },
      );
      held.outcome.catch(() => undefined); // read by the holder through outcome()
    });
  }

  /**
   * A transaction of a handler that runs inside a held one: a savepoint of it, whose after-commit
   * callbacks wait for the held transaction's commit.
   */
  private async join<T>(held: HeldTransaction, work: (tx: TxContext) => Promise<T>): Promise<T> {
    const outer = held.tx!;
    return outer.manager.transaction(async (manager) => {
      const before: AfterCommit[] = [];
      const value = await work({
        manager,
        afterCommit: (fn) => outer.afterCommit(fn),
        beforeCommit: (fn) => before.push(fn),
      });
      for (const fn of before) {
        await fn();
      }
      return value;
    });
  }

  async transaction<T>(work: (tx: TxContext) => Promise<T>): Promise<T> {
    const held = this.held.getStore();
    if (held?.open) {
      return this.join(held, work);
    }
    if (held && !held.started) {
      return this.openHeldTransaction(held, work);
    }
    return this.plainTransaction(work);
  }

  private async plainTransaction<T>(work: (tx: TxContext) => Promise<T>): Promise<T> {
    const held = this.openHeld();
    if (held) {
      return this.join(held, work);
    }
    const dry = this.dryRuns.getStore() === true;
    const run = async (closed?: () => void): Promise<T> => {
      const callbacks: AfterCommit[] = [];
      let result: T;
      try {
        result = await (this.txManager ?? this.dataSource.manager).transaction(async (manager) => {
          const before: AfterCommit[] = [];
          const value = await work({
            manager,
            afterCommit: (fn) => callbacks.push(fn),
            beforeCommit: (fn) => before.push(fn),
          });
          for (const fn of before) {
            await fn();
          }
          if (dry) {
            throw new DryRunRollback(value);
          }
          return value;
        });
      } catch (err) {
        if (err instanceof DryRunRollback) {
          return err.value as T;
        }
        throw err;
      } finally {
        closed?.();
      }
      for (const fn of callbacks) {
        try {
          await fn();
        } catch (err) {
          this.logger.error({ err }, 'after-commit callback failed');
        }
      }
      return result;
    };
    if (this.dialect === 'postgres') {
      return run();
    }
    this.txQueued += 1;
    const exclusive = () => {
      this.txQueued -= 1;
      return this.exclusively(run);
    };
    const next = this.tail.then(exclusive, exclusive);
    this.tail = next.catch(() => undefined);
    return next;
  }

  /**
   * SQLite: runs `work` as the open transaction. Outside statements issued from now on wait; those
   * already running finish first. The transaction closes (others may proceed) before its
   * after-commit callbacks run.
   */
  private async exclusively<T>(work: (closed: () => void) => Promise<T>): Promise<T> {
    let close!: () => void;
    this.txClosed = new Promise<void>((resolve) => (close = resolve));
    this.txOpen = true;
    let closed = false;
    const closeOnce = () => {
      if (!closed) {
        closed = true;
        this.txOpen = false;
        close();
      }
    };
    try {
      if (this.outsideInFlight > 0) {
        await new Promise<void>((resolve) => (this.outsideDrained = resolve));
        this.outsideDrained = null;
      }
      return await work(closeOnce);
    } finally {
      closeOnce();
    }
  }

  /** True for the unique-constraint violation of either dialect. */
  isUniqueViolation(err: unknown): boolean {
    const e = err as { code?: string; driverError?: { code?: string } };
    const code = e?.driverError?.code ?? e?.code;
    return code === '23505' || code === 'SQLITE_CONSTRAINT_UNIQUE';
  }
}
