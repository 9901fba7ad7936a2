import type { DatabaseService } from '../database/database.service.js';
import {
  PG_POST_SEARCH_VECTOR,
  PG_USER_SEARCH_VECTOR,
} from '../database/migrations/1764300000019-search-index.js';

/** Words of one search term at most (each is one index look-up). */
export const MAX_SEARCH_WORDS = 8;

/**
 * The words of a search term, as the indexes split text (migration 1764300000019): runs of letters
 * and digits, lower-cased, duplicates dropped. Everything else (quotes, `*`, `:`, `-`, `&`, FTS or
 * tsquery operators...) only separates words, so nothing in a term reaches a query parser as syntax.
 */
export function searchWords(term: string): string[] {
  return [...new Set(term.toLowerCase().match(/[\p{L}\p{N}\p{Co}]+/gu) ?? [])];
}

const TABLES = {
  posts: { key: 'post_id', pgVector: PG_POST_SEARCH_VECTOR },
  users: { key: 'user_id', pgVector: PG_USER_SEARCH_VECTOR },
} as const;

/**
 * The WHERE condition (and its one parameter, number `param`) matching the live rows of `table` in
 * which every word is the start of some word: SQLite FTS5 prefix queries (`"word"*`, quoted), or a
 * PostgreSQL tsquery (`word:* & ...`) on the GIN-indexed expression. `words` come from searchWords.
 */
export function searchCondition(
  db: DatabaseService,
  table: keyof typeof TABLES,
  words: readonly string[],
  param: number,
): { sql: string; value: string } {
  const { key, pgVector } = TABLES[table];
  if (db.dialect === 'postgres') {
    return {
      sql: `${pgVector} @@ to_tsquery('simple'::regconfig, ${db.p(param)})`,
      value: words.map((w) => `${w}:*`).join(' & '),
    };
  }
  return {
    sql: `id IN (SELECT r.${key} FROM ${table}_fts_rows r WHERE r.rowid IN
            (SELECT rowid FROM ${table}_fts WHERE ${table}_fts MATCH ${db.p(param)}))`,
    value: words.map((w) => `"${w}"*`).join(' '),
  };
}
