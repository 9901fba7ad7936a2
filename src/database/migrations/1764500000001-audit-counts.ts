import { MigrationInterface, QueryRunner } from 'typeorm';
import { AUDIT_RECOUNT_SQL, backfillCounters } from '../counters.repository.js';

/**
 * Counters of the audit log (`list_counts`: all entries, by action, actor and target, and by the
 * calendar units of `at`), so `meta.total` of `GET /api/v1/audit-events` is a counter read, or a
 * sum of counters for `since`/`until`, instead of a COUNT of the log. Backfilled from the table.
 */
export class AuditCounts1764500000001 implements MigrationInterface {
  name = 'AuditCounts1764500000001';

  async up(q: QueryRunner): Promise<void> {
    await backfillCounters(q, AUDIT_RECOUNT_SQL);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DELETE FROM list_counts WHERE scope = 'audit' OR scope LIKE 'audit:%'`);
  }
}
