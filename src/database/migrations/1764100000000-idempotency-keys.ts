import { MigrationInterface, QueryRunner, Table, TableIndex } from 'typeorm';

/**
 * Idempotency-Key records (docs/idempotency.md): one row per (caller, method, path, key), hashed
 * into `id`. `status` is null while the first request runs (`locked_until` bounds how long a
 * crashed instance can hold it); then the stored response is replayed until `expires_at`.
 */
export class IdempotencyKeys1764100000000 implements MigrationInterface {
  name = 'IdempotencyKeys1764100000000';

  async up(q: QueryRunner): Promise<void> {
    await q.createTable(
      new Table({
        name: 'idempotency_keys',
        columns: [
          { name: 'id', type: 'varchar', length: '64', isPrimary: true },
          { name: 'request_hash', type: 'varchar', length: '64' },
          { name: 'status', type: 'integer', isNullable: true },
          { name: 'response_headers', type: 'text', isNullable: true },
          { name: 'response_body', type: 'text', isNullable: true },
          { name: 'created_at', type: 'varchar', length: '24' },
          { name: 'locked_until', type: 'varchar', length: '24', isNullable: true },
          { name: 'expires_at', type: 'varchar', length: '24' },
        ],
      }),
    );
    await q.createIndex(
      'idempotency_keys',
      new TableIndex({ name: 'ix_idempotency_keys_expires', columnNames: ['expires_at'] }),
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await q.dropTable('idempotency_keys');
  }
}
