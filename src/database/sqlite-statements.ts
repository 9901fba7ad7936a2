/** The part of a better-sqlite3 statement the database door uses. */
interface SqliteStatement {
  readonly reader: boolean;
  all(...params: unknown[]): unknown[];
  run(...params: unknown[]): unknown;
  raw(toggle: boolean): SqliteStatement;
  columns(): { name: string }[];
}

/** The part of a better-sqlite3 connection the cache uses. */
export interface SqliteConnection {
  prepare(sql: string): SqliteStatement;
}

/**
 * A prepared statement of the cache. A reader runs in better-sqlite3's raw mode, its rows made
 * objects by `rowObjects` of `sqlite-rows.ts` (cheaper than better-sqlite3's own).
 */
export interface CachedStatement {
  statement: SqliteStatement;
  /** A reader's column names, in order; undefined for a statement that returns no rows. */
  columns: string[] | undefined;
}

/** Distinct SQL texts kept prepared (the oldest is dropped beyond this). */
const STATEMENT_CACHE_SIZE = 500;

/** The prepared statements of `DatabaseService.query`'s SQLite fast path, by SQL text. */
export class SqliteStatementCache {
  private readonly statements = new Map<string, CachedStatement>();

  constructor(private readonly connection: SqliteConnection) {}

  get(sql: string): CachedStatement {
    let cached = this.statements.get(sql);
    if (!cached) {
      const statement = this.connection.prepare(sql);
      cached = statement.reader
        ? { statement: statement.raw(true), columns: statement.columns().map((c) => c.name) }
        : { statement, columns: undefined };
      if (this.statements.size >= STATEMENT_CACHE_SIZE) {
        this.statements.delete(this.statements.keys().next().value as string);
      }
      this.statements.set(sql, cached);
    }
    return cached;
  }
}
