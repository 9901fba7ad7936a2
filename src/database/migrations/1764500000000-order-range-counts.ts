import { MigrationInterface, QueryRunner } from 'typeorm';
import { backfillCounters } from '../counters.repository.js';
import { ORDER_RANGE_RECOUNT_SQL } from '../order-range-keys.js';

/**
 * The range counters of the orders list across users (src/database/order-range-keys.ts): the exact
 * total of a date or total filter becomes a sum of at most a few hundred counters instead of a COUNT
 * of every match. Backfilled from the tables; a fresh database has already counted them
 * (ListCounts recounts with the current TABLE_RECOUNT_SQL), hence the upsert.
 */
export class OrderRangeCounts1764500000000 implements MigrationInterface {
  name = 'OrderRangeCounts1764500000000';

  async up(q: QueryRunner): Promise<void> {
    await backfillCounters(q, ORDER_RANGE_RECOUNT_SQL);
  }

  async down(q: QueryRunner): Promise<void> {
    for (const pattern of [
      'orders:%:created:%',
      'orders:created:%',
      'orders:%:total:%',
      'orders:total:%',
    ]) {
      await q.query(`DELETE FROM list_counts WHERE scope LIKE '${pattern}'`);
    }
  }
}
