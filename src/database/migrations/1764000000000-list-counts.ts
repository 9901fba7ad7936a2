import { MigrationInterface, QueryRunner, Table } from 'typeorm';
import { TABLE_RECOUNT_SQL } from '../counters.repository.js';

/**
 * `list_counts`: one exact row count per list and filter (see CountersRepository), maintained in the
 * transaction of every write, so `meta.total` and `totalCount` cost one primary-key read at any size.
 * Backfilled here from the tables with the same queries `npm run counts:check` compares against.
 */
export class ListCounts1764000000000 implements MigrationInterface {
  name = 'ListCounts1764000000000';

  async up(q: QueryRunner): Promise<void> {
    await q.createTable(
      new Table({
        name: 'list_counts',
        columns: [
          { name: 'scope', type: 'varchar', length: '100', isPrimary: true },
          { name: 'n', type: 'bigint', default: 0 },
        ],
      }),
    );
    for (const sql of TABLE_RECOUNT_SQL) {
      await q.query(`INSERT INTO list_counts (scope, n) SELECT scope, n FROM (${sql}) counted`);
    }
  }

  async down(q: QueryRunner): Promise<void> {
    await q.dropTable('list_counts');
  }
}
