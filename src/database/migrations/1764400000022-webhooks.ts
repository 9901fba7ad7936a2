import { MigrationInterface, QueryRunner, Table, TableIndex } from 'typeorm';

/**
 * Webhooks (docs/webhooks.md): endpoints, the event outbox written in the same transaction as each
 * change, and one delivery row per (event, endpoint) that the delivery engine claims with a lease.
 * Timestamps are RFC 3339 strings (they sort as text on both dialects).
 */
export class Webhooks1764400000022 implements MigrationInterface {
  name = 'Webhooks1764400000022';

  async up(q: QueryRunner): Promise<void> {
    const ts = (name: string, isNullable = false) => ({
      name,
      type: 'varchar',
      length: '24',
      isNullable,
    });
    await q.createTable(
      new Table({
        name: 'webhook_endpoints',
        columns: [
          { name: 'id', type: 'varchar', length: '30', isPrimary: true },
          { name: 'url', type: 'varchar', length: '2048' },
          { name: 'description', type: 'varchar', length: '500', isNullable: true },
          { name: 'events', type: 'text' },
          { name: 'oauth_client_id', type: 'varchar', length: '64', isNullable: true },
          { name: 'active', type: 'integer', default: 1 },
          { name: 'disabled_reason', type: 'varchar', length: '500', isNullable: true },
          { name: 'secret', type: 'varchar', length: '100' },
          { name: 'previous_secret', type: 'varchar', length: '100', isNullable: true },
          ts('previous_secret_expires_at', true),
          ts('failing_since', true),
          ts('created_at'),
          ts('updated_at'),
        ],
      }),
    );
    await q.createIndex(
      'webhook_endpoints',
      new TableIndex({ name: 'ix_webhook_endpoints_created', columnNames: ['created_at', 'id'] }),
    );
    await q.createTable(
      new Table({
        name: 'webhook_events',
        columns: [
          { name: 'id', type: 'varchar', length: '30', isPrimary: true },
          { name: 'type', type: 'varchar', length: '40' },
          { name: 'user_id', type: 'varchar', length: '30', isNullable: true },
          { name: 'payload', type: 'text' },
          ts('created_at'),
          ts('dispatched_at', true),
        ],
      }),
    );
    await q.createIndex(
      'webhook_events',
      new TableIndex({
        name: 'ix_webhook_events_undispatched',
        columnNames: ['dispatched_at', 'created_at'],
      }),
    );
    await q.createTable(
      new Table({
        name: 'webhook_deliveries',
        columns: [
          { name: 'id', type: 'varchar', length: '30', isPrimary: true },
          { name: 'endpoint_id', type: 'varchar', length: '30' },
          { name: 'event_id', type: 'varchar', length: '30' },
          { name: 'type', type: 'varchar', length: '40' },
          { name: 'status', type: 'varchar', length: '10' },
          { name: 'attempts', type: 'integer', default: 0 },
          { name: 'last_status_code', type: 'integer', isNullable: true },
          { name: 'last_duration_ms', type: 'integer', isNullable: true },
          { name: 'last_error', type: 'varchar', length: '500', isNullable: true },
          ts('next_attempt_at', true),
          ts('lease_until', true),
          ts('created_at'),
          ts('updated_at'),
        ],
      }),
    );
    await q.createIndex(
      'webhook_deliveries',
      new TableIndex({
        name: 'ix_webhook_deliveries_due',
        columnNames: ['status', 'next_attempt_at'],
      }),
    );
    await q.createIndex(
      'webhook_deliveries',
      new TableIndex({
        name: 'ix_webhook_deliveries_endpoint',
        columnNames: ['endpoint_id', 'created_at', 'id'],
      }),
    );
    await q.createIndex(
      'webhook_deliveries',
      new TableIndex({ name: 'ix_webhook_deliveries_event', columnNames: ['event_id'] }),
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await q.dropTable('webhook_deliveries');
    await q.dropTable('webhook_events');
    await q.dropTable('webhook_endpoints');
  }
}
