import { DomainError } from '../common/errors.js';
import type { DatabaseService } from './database.service.js';
import { PG_POST_SEARCH_VECTOR, PG_USER_SEARCH_VECTOR } from './search-vectors.js';

/**
 * The statements on the search indexes (migration 1764300000019), used by the users and posts
 * repositories; the words come from `searchWords` (src/database/search-query.ts).
 */

const TABLES = {
  posts: { key: 'post_id', pgVector: PG_POST_SEARCH_VECTOR },
  users: { key: 'user_id', pgVector: PG_USER_SEARCH_VECTOR },
} as const;

/** The SQLite FTS5 prefix query of `words` (`"word"*`, quoted: no FTS syntax from a term). */
function sqliteMatch(words: readonly string[]): string {
  return words.map((w) => `"${w}"*`).join(' ');
}

/** The PostgreSQL tsquery of `words` (`word:* & ...`; searchWords leaves no tsquery syntax). */
function pgTsquery(words: readonly string[]): string {
  return words.map((w) => `${w}:*`).join(' & ');
}

/**
 * PostgreSQL: the planner options of a search's transaction (`SET LOCAL`: this transaction only).
 * The statement (pgSearchSql) leaves the planner two ways to find the matches, a bitmap scan of
 * the GIN index and a sequential scan, and two ways to fetch the page, a TID scan and a sequential
 * scan: with sequential and plain index scans off, one plan remains whatever the statistics say
 * (docs/lists.md "Search plans"). No parallel workers: their start-up (15-25 ms on a busy machine)
 * dwarfs an index look-up. The users list's `q=` search (users.repository.ts searchPage) uses the
 * same options.
 */
export const PG_SEARCH_PLAN =
  'SET LOCAL enable_seqscan = off; SET LOCAL enable_indexscan = off; SET LOCAL max_parallel_workers_per_gather = 0';

/**
 * PostgreSQL: the live rows of `table` matching the tsquery `$1`, newest first, at most `limit`.
 * `hits` holds only what the GIN index can answer: its one condition is the indexed expression (the
 * index has no WHERE, and `deleted_at` is tested outside the fence), and it has no ORDER BY, so no
 * b-tree index (none of them indexes that expression; the partial `deleted_at IS NULL` ones need
 * that condition to apply) offers a path into it; MATERIALIZED keeps the outer query from pulling
 * conditions or the order into it. Each hit carries its row's address (`ctid`), so the page's rows
 * are fetched by address (a TID scan) rather than through another index; one statement, one
 * snapshot, so the addresses are those of the rows it saw.
 */
function pgSearchSql(table: keyof typeof TABLES, columns: string, limit: number): string {
  return `WITH hits AS MATERIALIZED (
      SELECT ctid AS tid, created_at, id, deleted_at FROM ${table}
      WHERE ${TABLES[table].pgVector} @@ to_tsquery('simple'::regconfig, $1)
    )
    SELECT ${columns} FROM ${table} WHERE ctid = ANY (ARRAY(
      SELECT tid FROM hits WHERE deleted_at IS NULL ORDER BY created_at DESC, id DESC LIMIT ${Math.trunc(limit)}
    ))
    ORDER BY created_at DESC, id DESC`;
}

/**
 * PostgreSQL: longest run of one search statement. An index look-up takes milliseconds; what
 * reaches this is a prefix of one or two letters over millions of rows (most rows match), or a
 * search waiting for a lock. With PG_SEARCH_CONCURRENCY statements at once it bounds how long
 * searches hold their share of the pool.
 */
export const PG_SEARCH_TIMEOUT_MS = 2_000;

/** PostgreSQL's code for a statement cancelled (statement_timeout, or a cancel request). */
const QUERY_CANCELED = '57014';

/**
 * Search statements one instance runs at once on PostgreSQL (a pool has 10 connections): the
 * others wait here, not for a connection, so searches never hold the whole pool (sign-ins, lists
 * and writes keep the rest).
 */
export const PG_SEARCH_CONCURRENCY = 4;

/** A counting semaphore: at most `size` holders, the others wait in arrival order. */
class Gate {
  private busy = 0;
  private readonly waiting: (() => void)[] = [];

  constructor(private readonly size: number) {}

  async run<T>(work: () => Promise<T>): Promise<T> {
    if (this.busy >= this.size) {
      await new Promise<void>((resolve) => this.waiting.push(resolve));
    } else {
      this.busy++;
    }
    try {
      return await work();
    } finally {
      const next = this.waiting.shift();
      if (next) {
        next(); // the slot passes on
      } else {
        this.busy--;
      }
    }
  }
}

/** One gate per DatabaseService (per app: tests run several apps in one process). */
const gates = new WeakMap<DatabaseService, Gate>();

function gateOf(db: DatabaseService): Gate {
  let gate = gates.get(db);
  if (!gate) {
    gate = new Gate(PG_SEARCH_CONCURRENCY);
    gates.set(db, gate);
  }
  return gate;
}

function isCanceled(err: unknown): boolean {
  for (
    let e = err as { code?: unknown; driverError?: unknown } | undefined, n = 0;
    e && n < 5;
    n++
  ) {
    if (e.code === QUERY_CANCELED) {
      return true;
    }
    e = e.driverError as typeof e;
  }
  return false;
}

/**
 * `columns` of the live rows of `table` matching every word (searchWords), newest first.
 * PostgreSQL: at most PG_SEARCH_TIMEOUT_MS per statement (`statement_timeout`), at most
 * PG_SEARCH_CONCURRENCY statements at once; a search cut by the time limit fails with
 * `query_too_complex` (docs/lists.md "Search plans").
 */
export async function searchRows<R>(
  db: DatabaseService,
  table: keyof typeof TABLES,
  columns: string,
  words: readonly string[],
  limit: number,
): Promise<R[]> {
  if (db.dialect !== 'postgres') {
    // FTS5 joined to the table through the rowid map, in that order (CROSS JOIN fixes it: the
    // planner would otherwise walk the table and the map), newest first in the index's own order
    // (the map's rowids follow creation order, see the migration): no sort, and no more index
    // entries read than the page needs
    const key = TABLES[table].key;
    return db.query<R>(
      `SELECT ${columns} FROM ${table}_fts CROSS JOIN ${table}_fts_rows r CROSS JOIN ${table}
       WHERE deleted_at IS NULL AND ${table}_fts MATCH ? AND r.rowid = ${table}_fts.rowid
         AND ${table}.id = r.${key}
       ORDER BY ${table}_fts.rowid DESC LIMIT ${Math.trunc(limit)}`,
      [sqliteMatch(words)],
    );
  }
  const sql = pgSearchSql(table, columns, limit);
  try {
    return await gateOf(db).run(() =>
      db.transaction(async (tx) => {
        await tx.manager.query(
          `${PG_SEARCH_PLAN}; SET LOCAL statement_timeout = ${PG_SEARCH_TIMEOUT_MS}`,
        );
        return tx.manager.query<R[]>(sql, [pgTsquery(words)]);
      }),
    );
  } catch (err) {
    if (isCanceled(err)) {
      throw new DomainError(
        'query_too_complex',
        `The search took longer than ${PG_SEARCH_TIMEOUT_MS} ms; search for longer or more words`,
      );
    }
    throw err;
  }
}
