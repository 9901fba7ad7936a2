import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The orders list across users (docs/admin.md): the `total_cents` and `created_at` indexes also hold
 * `user_id`. The exact total of a total or date filter is a COUNT over the filter's index range that
 * checks each matching order's owner is live; with `user_id` in the index that count reads the index
 * alone, instead of one table row per match (and SQLite no longer prefers a skip-scan of the
 * `(user_id, total_cents, id)` index, one seek per user, for it). `user_id` comes after `id`, so the
 * indexes still serve the keyset order `(total_cents, id)` / `(created_at, id)` as before.
 * Plain SQL on both dialects (no TypeORM table rebuild on SQLite).
 */
const INDEXES = [
  { name: 'ix_orders_total', before: 'total_cents, id', after: 'total_cents, id, user_id' },
  { name: 'ix_orders_created', before: 'created_at, id', after: 'created_at, id, user_id' },
];

export class OrdersRangeCovering1764400000030 implements MigrationInterface {
  name = 'OrdersRangeCovering1764400000030';

  async up(q: QueryRunner): Promise<void> {
    for (const index of INDEXES) {
      await q.query(`DROP INDEX ${index.name}`);
      await q.query(`CREATE INDEX ${index.name} ON orders (${index.after})`);
    }
  }

  async down(q: QueryRunner): Promise<void> {
    for (const index of INDEXES) {
      await q.query(`DROP INDEX ${index.name}`);
      await q.query(`CREATE INDEX ${index.name} ON orders (${index.before})`);
    }
  }
}
