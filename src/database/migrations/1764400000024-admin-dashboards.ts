import { MigrationInterface, QueryRunner, Table, TableIndex } from 'typeorm';
import { ADMIN_RECOUNT_SQL, backfillCounters } from '../counters.repository.js';

/**
 * Admin dashboards (docs/admin.md):
 * - `audit_events`, append-only: newest-first pages and the `actor_id`/`target_id`/`action` filters
 *   are each one index range ending in `(at, id)`;
 * - indexes for the orders list across users: each sort (`created_at`, `total_cents`), alone and
 *   after the `status` and `user_id` filters, ending in `id` for the keyset order;
 * - an index for the e-mail prefix match of the user search (PostgreSQL: in the "C" collation, so a
 *   prefix is one byte range whatever the database's collation);
 * - the counters of the orders list across users (orders of live users, and per status), backfilled.
 */
const ORDER_INDEXES = [
  new TableIndex({ name: 'ix_orders_created', columnNames: ['created_at', 'id'] }),
  new TableIndex({ name: 'ix_orders_total', columnNames: ['total_cents', 'id'] }),
  new TableIndex({ name: 'ix_orders_status_created', columnNames: ['status', 'created_at', 'id'] }),
  new TableIndex({ name: 'ix_orders_status_total', columnNames: ['status', 'total_cents', 'id'] }),
  // one user's orders by total (the user_id filter with sort=total_cents), and of one status
  new TableIndex({ name: 'ix_orders_user_total', columnNames: ['user_id', 'total_cents', 'id'] }),
  new TableIndex({
    name: 'ix_orders_user_status_total',
    columnNames: ['user_id', 'status', 'total_cents', 'id'],
  }),
];

const AUDIT_INDEXES = [
  new TableIndex({ name: 'ix_audit_at', columnNames: ['at', 'id'] }),
  new TableIndex({ name: 'ix_audit_actor', columnNames: ['actor_id', 'at', 'id'] }),
  new TableIndex({ name: 'ix_audit_target', columnNames: ['target_id', 'at', 'id'] }),
  new TableIndex({ name: 'ix_audit_action', columnNames: ['action', 'at', 'id'] }),
];

export class AdminDashboards1764400000024 implements MigrationInterface {
  name = 'AdminDashboards1764400000024';

  async up(q: QueryRunner): Promise<void> {
    await q.createTable(
      new Table({
        name: 'audit_events',
        columns: [
          { name: 'id', type: 'varchar', length: '40', isPrimary: true },
          { name: 'at', type: 'varchar', length: '30' },
          { name: 'actor_type', type: 'varchar', length: '20' },
          { name: 'actor_id', type: 'varchar', length: '64', isNullable: true },
          { name: 'on_behalf_of', type: 'varchar', length: '40', isNullable: true },
          { name: 'action', type: 'varchar', length: '40' },
          { name: 'target_type', type: 'varchar', length: '20' },
          { name: 'target_id', type: 'varchar', length: '64' },
          { name: 'changes', type: 'text' },
          { name: 'request_id', type: 'varchar', length: '128', isNullable: true },
          { name: 'ip', type: 'varchar', length: '64', isNullable: true },
        ],
      }),
    );
    await q.createIndices('audit_events', AUDIT_INDEXES);
    await q.createIndices('orders', ORDER_INDEXES);
    if (q.connection.options.type === 'postgres') {
      await q.query(
        `CREATE INDEX ix_users_email_prefix ON users (email_normalized COLLATE "C") WHERE deleted_at IS NULL`,
      );
    } else {
      await q.query(
        `CREATE INDEX ix_users_email_prefix ON users (email_normalized) WHERE deleted_at IS NULL`,
      );
    }
    await backfillCounters(q, ADMIN_RECOUNT_SQL);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DELETE FROM list_counts WHERE scope = 'orders' OR scope LIKE 'orders:status:%'`);
    await q.query('DROP INDEX ix_users_email_prefix');
    for (const index of ORDER_INDEXES) {
      await q.dropIndex('orders', index.name!);
    }
    await q.dropTable('audit_events');
  }
}
