import { MigrationInterface, QueryRunner } from 'typeorm';
// the expressions the search query repeats (src/database/search-vectors.ts)
import { PG_POST_SEARCH_VECTOR, PG_USER_SEARCH_VECTOR } from '../search-vectors.js';

/**
 * SQLite: a contentless FTS5 index (no copy of the text) per searched table, and a map from its
 * rowids to the rows' ids (an INTEGER PRIMARY KEY, so VACUUM never renumbers it), kept in step by
 * triggers on the live rows (`deleted_at IS NULL`). Map rowids follow creation order (existing rows
 * are numbered by `created_at, id`; an edit keeps its row's number), so the FTS5 rowid order is
 * newest first and a search reads the index only until it has its page. Tokens: runs of letters and
 * digits, case-folded, accents kept; prefix indexes for 1-3 characters, so a short prefix is one
 * doclist, not a merge of every word it starts.
 */
function sqliteStatements(
  table: string,
  key: string,
  columns: string,
  text: (row: string) => string,
): string[] {
  const fts = `${table}_fts`;
  const rows = `${table}_fts_rows`;
  const index = (row: string) =>
    `INSERT INTO ${fts} (rowid, words) SELECT rowid, ${text(row)} FROM ${rows} WHERE ${key} = ${row}.id;`;
  const unindex = (row: string) =>
    `DELETE FROM ${fts} WHERE rowid = (SELECT rowid FROM ${rows} WHERE ${key} = ${row}.id);`;
  const add = (row: string) => `INSERT INTO ${rows} (${key}) VALUES (${row}.id); ${index(row)}`;
  const remove = (row: string) => `${unindex(row)} DELETE FROM ${rows} WHERE ${key} = ${row}.id;`;
  const trigger = (name: string, event: string, when: string, body: string) =>
    `CREATE TRIGGER ${table}_search_${name} AFTER ${event} ON ${table} WHEN ${when} BEGIN ${body} END`;
  const live = (row: string) => `${row}.deleted_at IS NULL`;
  const gone = (row: string) => `${row}.deleted_at IS NOT NULL`;
  const changed = `UPDATE OF ${columns}, deleted_at`;
  return [
    `CREATE TABLE ${rows} (rowid INTEGER PRIMARY KEY, ${key} varchar NOT NULL UNIQUE)`,
    `CREATE VIRTUAL TABLE ${fts} USING fts5(words, content='', contentless_delete=1, detail=none,
       prefix='1 2 3', tokenize='unicode61 remove_diacritics 0')`,
    `INSERT INTO ${rows} (${key}) SELECT id FROM ${table} WHERE deleted_at IS NULL ORDER BY created_at, id`,
    `INSERT INTO ${fts} (rowid, words) SELECT r.rowid, ${text('t')} FROM ${rows} r JOIN ${table} t ON t.id = r.${key}`,
    trigger('insert', 'INSERT', live('new'), add('new')),
    trigger(
      'edit',
      changed,
      `${live('old')} AND ${live('new')}`,
      `${unindex('old')} ${index('new')}`,
    ),
    trigger('soft_delete', changed, `${live('old')} AND ${gone('new')}`, remove('old')),
    trigger('restore', changed, `${gone('old')} AND ${live('new')}`, add('new')),
    trigger('delete', 'DELETE', live('old'), remove('old')),
  ];
}

/**
 * Index-backed `search` (docs/graphql.md "Search"): post titles and bodies and user names as words,
 * matched by word prefix. PostgreSQL: GIN indexes on the live rows' `tsvector` expressions.
 */
export class SearchIndex1764300000019 implements MigrationInterface {
  name = 'SearchIndex1764300000019';

  async up(q: QueryRunner): Promise<void> {
    if (q.connection.options.type === 'postgres') {
      await q.query(
        `CREATE INDEX ix_posts_search ON posts USING gin (${PG_POST_SEARCH_VECTOR}) WHERE deleted_at IS NULL`,
      );
      await q.query(
        `CREATE INDEX ix_users_search ON users USING gin (${PG_USER_SEARCH_VECTOR}) WHERE deleted_at IS NULL`,
      );
      return;
    }
    for (const sql of [
      ...sqliteStatements(
        'posts',
        'post_id',
        'title, body',
        (r) => `${r}.title || ' ' || ${r}.body`,
      ),
      ...sqliteStatements('users', 'user_id', 'name', (r) => `${r}.name`),
    ]) {
      await q.query(sql);
    }
  }

  async down(q: QueryRunner): Promise<void> {
    if (q.connection.options.type === 'postgres') {
      await q.query('DROP INDEX ix_posts_search');
      await q.query('DROP INDEX ix_users_search');
      return;
    }
    for (const table of ['posts', 'users']) {
      for (const op of ['insert', 'edit', 'soft_delete', 'restore', 'delete']) {
        await q.query(`DROP TRIGGER ${table}_search_${op}`);
      }
      await q.query(`DROP TABLE ${table}_fts`);
      await q.query(`DROP TABLE ${table}_fts_rows`);
    }
  }
}
