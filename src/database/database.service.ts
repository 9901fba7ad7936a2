import { Injectable, Logger } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, EntityManager } from 'typeorm';
import type { ListQuery, PageMeta } from '../common/list-query.js';

type AfterCommit = () => void | Promise<void>;

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
  readonly dialect: 'sqlite' | 'postgres';

  constructor(@InjectDataSource() readonly dataSource: DataSource) {
    this.dialect = dataSource.options.type === 'postgres' ? 'postgres' : 'sqlite';
  }

  /** Positional parameter placeholder n (1-based) for raw SQL on this dialect. */
  p(n: number): string {
    return this.dialect === 'postgres' ? `$${n}` : '?';
  }

  /** Raw read through the driver's cached prepared statements (the hot path: no query building). */
  async query<T>(sql: string, params: unknown[] = []): Promise<T[]> {
    return this.dataSource.query<T[]>(sql, params);
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
    const rows = await this.query<R>(
      `SELECT ${sql.columns} FROM ${sql.from} WHERE ${sql.where} ORDER BY ${sql.orderBy}
       LIMIT ${query.limit} OFFSET ${(query.page - 1) * query.limit}`,
      params,
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
