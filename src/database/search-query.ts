/** Words of one search term at most (each is one index look-up). */
export const MAX_SEARCH_WORDS = 8;

/**
 * The words of a search term, as the indexes split text (migration 1764300000019): runs of letters
 * and digits, lower-cased, duplicates dropped. Everything else (quotes, `*`, `:`, `-`, `&`, FTS or
 * tsquery operators...) only separates words, so nothing in a term reaches a query parser as syntax.
 * The statements on the indexes are in src/database/search-index.ts.
 */
export function searchWords(term: string): string[] {
  return [...new Set(term.toLowerCase().match(/[\p{L}\p{N}\p{Co}]+/gu) ?? [])];
}
