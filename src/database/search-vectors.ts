/**
 * The PostgreSQL text of a row's search words: every run of characters other than letters and digits
 * becomes one space before the 'simple' parser sees it, so that its words are exactly the runs of
 * letters and digits that SQLite's unicode61 tokenizer finds (no e-mail, URL, hyphenated-word or
 * decimal tokens), lower-cased and not stemmed. The search index (migration 1764300000019) is built
 * on these expressions and the search query (search-index.ts, users.repository.ts) repeats them
 * verbatim, so that PostgreSQL uses the index: both import them from here, never the query from
 * the migration.
 */
function pgSearchVector(text: string): string {
  return `to_tsvector('simple'::regconfig, regexp_replace(${text}, '[^[:alnum:]]+', ' ', 'g'))`;
}
export const PG_POST_SEARCH_VECTOR = pgSearchVector(`title || ' ' || body`);
export const PG_USER_SEARCH_VECTOR = pgSearchVector('name');
