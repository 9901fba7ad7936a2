import { MigrationInterface, QueryRunner } from 'typeorm';
import { PG_POST_SEARCH_VECTOR, PG_USER_SEARCH_VECTOR } from '../search-vectors.js';

/**
 * PostgreSQL: the search indexes cover every row, not only the live ones (`WHERE deleted_at IS
 * NULL` dropped). A partial index can serve a query only when the query repeats its condition, and
 * that condition also makes every other `deleted_at IS NULL` index (the list indexes) a candidate:
 * with stale statistics the planner took one of those and parsed every row's text. The search now
 * asks the index for the expression alone and drops deleted rows afterwards, which leaves the
 * planner no other index (docs/lists.md "Search plans"). SQLite's FTS5 indexes are unchanged.
 */
const INDEXES = [
  { name: 'ix_posts_search', table: 'posts', vector: PG_POST_SEARCH_VECTOR },
  { name: 'ix_users_search', table: 'users', vector: PG_USER_SEARCH_VECTOR },
];

export class SearchIndexWhole1764600000010 implements MigrationInterface {
  name = 'SearchIndexWhole1764600000010';

  async up(q: QueryRunner): Promise<void> {
    if (q.connection.options.type !== 'postgres') {
      return;
    }
    for (const { name, table, vector } of INDEXES) {
      await q.query(`DROP INDEX ${name}`);
      await q.query(`CREATE INDEX ${name} ON ${table} USING gin (${vector})`);
    }
  }

  async down(q: QueryRunner): Promise<void> {
    if (q.connection.options.type !== 'postgres') {
      return;
    }
    for (const { name, table, vector } of INDEXES) {
      await q.query(`DROP INDEX ${name}`);
      await q.query(
        `CREATE INDEX ${name} ON ${table} USING gin (${vector}) WHERE deleted_at IS NULL`,
      );
    }
  }
}
