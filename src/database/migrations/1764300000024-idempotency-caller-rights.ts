import { MigrationInterface, QueryRunner, TableColumn } from 'typeorm';

/**
 * The rights the first request of an Idempotency-Key ran with (its caller's effective role and
 * OAuth scopes, as JSON): a replay to a caller with fewer rights is checked first
 * (docs/idempotency.md). Null on records written before this column: those are checked too.
 */
export class IdempotencyCallerRights1764300000024 implements MigrationInterface {
  name = 'IdempotencyCallerRights1764300000024';

  async up(q: QueryRunner): Promise<void> {
    await q.addColumn(
      'idempotency_keys',
      new TableColumn({ name: 'caller_rights', type: 'text', isNullable: true }),
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await q.dropColumn('idempotency_keys', 'caller_rights');
  }
}
