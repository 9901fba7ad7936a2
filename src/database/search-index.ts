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

/**
 * The rows of `table` in which every word is the start of some word: the FROM and WHERE of the
 * query (`where` uses parameter number `param`, whose value is `value`). SQLite: an FTS5 prefix
 * query (`"word"*`, quoted) joined to the table through the rowid map, in that order (CROSS JOIN
 * fixes it: the planner would otherwise walk the table and the map), newest first in the index's
 * own order (no sort, and no more index entries read than the page needs); PostgreSQL: a tsquery
 * (`word:* & ...`) on the GIN-indexed expression. `words` come from searchWords.
 */
function searchSource(
  db: DatabaseService,
  table: keyof typeof TABLES,
  words: readonly string[],
  param: number,
): { from: string; where: string; order: string; value: string } {
  const { key, pgVector } = TABLES[table];
  if (db.dialect === 'postgres') {
    return {
      from: table,
      where: `${pgVector} @@ to_tsquery('simple'::regconfig, ${db.p(param)})`,
      order: 'created_at DESC, id DESC',
      value: words.map((w) => `${w}:*`).join(' & '),
    };
  }
  return {
    from: `${table}_fts CROSS JOIN ${table}_fts_rows r CROSS JOIN ${table}`,
    where: `${table}_fts MATCH ${db.p(param)} AND r.rowid = ${table}_fts.rowid AND ${table}.id = r.${key}`,
    // the index's rowids follow creation order (the migration): read newest first, stop at the page
    order: `${table}_fts.rowid DESC`,
    value: words.map((w) => `"${w}"*`).join(' '),
  };
}

/**
 * PostgreSQL plans a search with the GIN index only: its estimates for prefix queries are rough, and
 * with a common-looking prefix it would walk the `created_at` index parsing every row's text (or scan
 * the table) instead. The same rough estimate (a one-character prefix is taken for ~2 % of the rows)
 * made it start parallel workers for a search of a million users: 15–25 ms of worker start-up on a
 * busy machine around a look-up that took 0.1 ms, so no workers either. For this one statement
 * (`SET LOCAL`, in its own transaction).
 */
export const PG_SEARCH_PLAN =
  'SET LOCAL enable_seqscan = off; SET LOCAL enable_indexscan = off; SET LOCAL max_parallel_workers_per_gather = 0';

/** `columns` of the live rows of `table` matching every word (searchWords), newest first. */
export async function searchRows<R>(
  db: DatabaseService,
  table: keyof typeof TABLES,
  columns: string,
  words: readonly string[],
  limit: number,
): Promise<R[]> {
  const { from, where, order, value } = searchSource(db, table, words, 1);
  const sql = `SELECT ${columns} FROM ${from} WHERE deleted_at IS NULL AND ${where}
    ORDER BY ${order} LIMIT ${Math.trunc(limit)}`;
  if (db.dialect !== 'postgres') {
    return db.query<R>(sql, [value]);
  }
  return db.transaction(async (tx) => {
    await tx.manager.query(PG_SEARCH_PLAN);
    return tx.manager.query<R[]>(sql, [value]);
  });
}
