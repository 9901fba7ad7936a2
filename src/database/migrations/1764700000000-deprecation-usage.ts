import { MigrationInterface, QueryRunner, Table, TableIndex } from 'typeorm';

/**
 * `deprecation_usage`: how often each client used each deprecated GraphQL element, one row per
 * (element, client, UTC day), kept 90 days (docs/changes.md). Instances add their counts in batches
 * with `n = n + excluded.n`, so two instances never lose each other's counts.
 */
export class DeprecationUsage1764700000000 implements MigrationInterface {
  name = 'DeprecationUsage1764700000000';

  async up(q: QueryRunner): Promise<void> {
    await q.createTable(
      new Table({
        name: 'deprecation_usage',
        columns: [
          { name: 'element', type: 'varchar', length: '200', isPrimary: true },
          { name: 'client', type: 'varchar', length: '200', isPrimary: true },
          { name: 'day', type: 'varchar', length: '10', isPrimary: true },
          { name: 'n', type: 'integer' },
          { name: 'last_used_at', type: 'varchar', length: '30' },
        ],
      }),
    );
    await q.createIndex(
      'deprecation_usage',
      new TableIndex({ name: 'ix_deprecation_usage_day', columnNames: ['day'] }),
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await q.dropTable('deprecation_usage');
  }
}
