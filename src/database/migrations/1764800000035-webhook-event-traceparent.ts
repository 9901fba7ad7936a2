import { MigrationInterface, QueryRunner, TableColumn } from 'typeorm';

/**
 * `webhook_events.traceparent`: the W3C `traceparent` of the request whose change produced the
 * event (null without tracing). Every delivery attempt of the event, retries and redeliveries days
 * later included, continues that trace (docs/operations.md, "Traces").
 */
export class WebhookEventTraceparent1764800000035 implements MigrationInterface {
  name = 'WebhookEventTraceparent1764800000035';

  async up(q: QueryRunner): Promise<void> {
    await q.query('ALTER TABLE webhook_events ADD COLUMN traceparent varchar(55)');
  }

  async down(q: QueryRunner): Promise<void> {
    await q.dropColumn('webhook_events', new TableColumn({ name: 'traceparent', type: 'varchar' }));
  }
}
