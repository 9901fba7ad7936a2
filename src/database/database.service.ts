import { Injectable, Logger } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, EntityManager, QueryFailedError } from 'typeorm';
import type { ListQuery, PageMeta } from '../common/list-query.js';

type AfterCommit = () => void | Promise<void>;

/** The part of a better-sqlite3 statement this service uses. */
interface SqliteStatement {
  readonly reader: boolean;
  all(...params: unknown[]): unknown[];
  run(...params: unknown[]): unknown;
}

/** Distinct SQL texts kept prepared (the oldest is dropped beyond this). */
const STATEMENT_CACHE_SIZE = 500;

export interface TxContext {
  manager: EntityManager;
  /** Runs `fn` once the transaction has committed (events are published only then). */
  afterCommit(fn: AfterCommit): void;
}

/**
 * The one door for writes. On SQLite, TypeORM shares a single connection between callers, so two
 * interleaved transactions would mix their statements: writes are queued one at a time. On
 * PostgreSQL each transaction gets its own pooled connection.
 */
@Injectable()
export class DatabaseService {
  private readonly logger = new Logger(DatabaseService.name);
  private tail: Promise<unknown> = Promise.resolve();
  private readonly statements = new Map<string, SqliteStatement>();
  readonly dialect: 'sqlite' | 'postgres';

  constructor(@InjectDataSource() readonly dataSource: DataSource) {
    this.dialect = dataSource.options.type === 'postgres' ? 'postgres' : 'sqlite';
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
   */
  async query<T>(sql: string, params: unknown[] = []): Promise<T[]> {
    if (this.dialect === 'postgres') {
      return this.dataSource.query<T[]>(sql, params);
    }
    // better-sqlite3 cannot bind booleans (TypeORM converts them the same way)
    const values = params.map((v) => (typeof v === 'boolean' ? Number(v) : v));
    this.dataSource.logger.logQuery(sql, values);
    try {
      const statement = this.statement(sql);
      if (statement.reader) {
        return statement.all(...values) as T[];
      }
      statement.run(...values);
      return [];
    } catch (err) {
      throw new QueryFailedError(sql, values, err as Error);
    }
  }

  private statement(sql: string): SqliteStatement {
    let statement = this.statements.get(sql);
    if (!statement) {
      const connection = (
        this.dataSource.driver as unknown as {
          databaseConnection: { prepare(sql: string): SqliteStatement };
        }
      ).databaseConnection;
      statement = connection.prepare(sql);
      if (this.statements.size >= STATEMENT_CACHE_SIZE) {
        this.statements.delete(this.statements.keys().next().value as string);
      }
      this.statements.set(sql, statement);
    }
    return statement;
  }

  /**
   * One page of a page-numbered list: the total with COUNT(*) (TypeORM's COUNT(1) is a scan on SQLite)
   * and the page's rows. `from`, `where` and `orderBy` are SQL built from whitelisted names only;
   * values travel in `params`.
   */
  async page<R>(
    sql: { columns: string; from: string; where: string; orderBy: string },
    params: unknown[],
    query: Pick<ListQuery, 'page' | 'limit'>,
  ): Promise<{ rows: R[]; meta: PageMeta }> {
    const [count] = await this.query<{ total: number | string }>(
      `SELECT COUNT(*) AS total FROM ${sql.from} WHERE ${sql.where}`,
      params,
    );
    // LIMIT/OFFSET are bound, not inlined, so one prepared statement serves every page
    const n = params.length;
    const rows = await this.query<R>(
      `SELECT ${sql.columns} FROM ${sql.from} WHERE ${sql.where} ORDER BY ${sql.orderBy}
       LIMIT ${this.p(n + 1)} OFFSET ${this.p(n + 2)}`,
      [...params, query.limit, (query.page - 1) * query.limit],
    );
    return {
      rows,
      meta: { page: query.page, limit: query.limit, total: Number(count?.total ?? 0) },
    };
  }

  async transaction<T>(work: (tx: TxContext) => Promise<T>): Promise<T> {
    const run = async (): Promise<T> => {
      const callbacks: AfterCommit[] = [];
      const result = await this.dataSource.transaction((manager) =>
        work({ manager, afterCommit: (fn) => callbacks.push(fn) }),
      );
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
    const next = this.tail.then(run, run);
    this.tail = next.catch(() => undefined);
    return next;
  }

  /** True for the unique-constraint violation of either dialect. */
  isUniqueViolation(err: unknown): boolean {
    const e = err as { code?: string; driverError?: { code?: string } };
    const code = e?.driverError?.code ?? e?.code;
    return code === '23505' || code === 'SQLITE_CONSTRAINT_UNIQUE';
  }
}
