import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freshDatabaseUrl, startApp, usingPostgres, type TestApp } from './helpers/app.js';
import { adminClient, unique } from './helpers/factories.js';
import type { Client } from './helpers/http.js';
import { eventually, WebhookReceiver } from './helpers/webhook-receiver.js';

/**
 * The delivery engine writes a batch of outcomes in one transaction, and a failing endpoint's row is
 * updated in it (`failing_since`). Deleting an endpoint locks its row, then deletes its deliveries.
 * When the engine updated the delivery rows first and the endpoint row last, the two transactions
 * could wait for each other and PostgreSQL aborted one: `DELETE /webhooks/{id}` answered 500 in a
 * CI run. The engine now locks the endpoint rows first. SQLite runs one transaction at a time.
 */
describe.skipIf(!usingPostgres)(
  `webhook outcomes lock endpoint rows before delivery rows${usingPostgres ? '' : ' (skipped: row locks are PostgreSQL only)'}`,
  () => {
    let t: TestApp;
    let admin: Client;
    let receiver: WebhookReceiver;
    let holder: pg.Client;
    let probe: pg.Client;
    let schema: string;

    beforeAll(async () => {
      receiver = await new WebhookReceiver().start();
      receiver.answer = () => ({ status: 500 });
      const url = new URL(freshDatabaseUrl());
      schema = url.searchParams.get('schema')!;
      t = await startApp({ WEBHOOK_ALLOWED_HOSTS: '127.0.0.1', DATABASE_URL: url.toString() });
      admin = await adminClient(t.url);
      url.searchParams.delete('schema');
      holder = new pg.Client({
        connectionString: url.toString(),
        options: `-c search_path=${schema}`,
      });
      probe = new pg.Client({
        connectionString: url.toString(),
        options: `-c search_path=${schema}`,
      });
      await holder.connect();
      await probe.connect();
    });

    /** The app's backends waiting for a row lock. */
    async function lockWaits(): Promise<number> {
      const waiting = await probe.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM pg_stat_activity
          WHERE application_name = $1 AND wait_event_type = 'Lock'`,
        [`atrium/${schema}`],
      );
      return waiting.rows[0].n;
    }

    /** An endpoint whose receiver answers 500 to everything, and the path it receives on. */
    async function failingEndpoint(name: string): Promise<{ path: string; endpointId: string }> {
      const path = `/${unique(name)}`;
      const created = await admin.post('/api/v1/webhooks', {
        url: receiver.url(path),
        events: ['user.updated'],
      });
      expect(created.status).toBe(201);
      return { path, endpointId: created.body.data.id as string };
    }

    afterAll(async () => {
      await holder?.end();
      await probe?.end();
      await t?.close();
      await receiver?.close();
    });

    it('an outcome batch waits for a locked endpoint before touching its deliveries, so deleting the endpoint goes through', async () => {
      const { path, endpointId } = await failingEndpoint('failing');

      // what DELETE /webhooks/{id} does first: the endpoint row, locked
      await holder.query('BEGIN');
      await holder.query('SELECT id FROM webhook_endpoints WHERE id = $1 FOR UPDATE', [endpointId]);

      // a delivery that fails: its outcome marks the endpoint failing, in a transaction of the engine
      const ping = await admin.post(`/api/v1/webhooks/${endpointId}/ping`, {});
      expect(ping.status).toBe(202);
      await eventually(async () => receiver.received.some((r) => r.path === path));
      // the engine's outcome transaction is now waiting for a lock the holder has
      await eventually(async () => (await lockWaits()) > 0);

      // it waits before updating the delivery rows: nothing of them is locked
      await probe.query('BEGIN');
      const free = await probe.query(
        'SELECT id FROM webhook_deliveries WHERE endpoint_id = $1 FOR UPDATE NOWAIT',
        [endpointId],
      );
      expect(free.rows.length).toBeGreaterThan(0);
      await probe.query('ROLLBACK');

      // the rest of the endpoint's deletion goes through, and so does the engine afterwards
      await holder.query('DELETE FROM webhook_deliveries WHERE endpoint_id = $1', [endpointId]);
      await holder.query('DELETE FROM webhook_endpoints WHERE id = $1', [endpointId]);
      await holder.query('COMMIT');
      await eventually(async () => (await lockWaits()) === 0);
      expect((await admin.get(`/api/v1/webhooks/${endpointId}`)).status).toBe(404);
    });

    it('DELETE /webhooks/{id} answers 204 while its failing deliveries are being recorded', async () => {
      const { path, endpointId } = await failingEndpoint('busy');
      for (let i = 0; i < 5; i++) {
        expect((await admin.post(`/api/v1/webhooks/${endpointId}/ping`, {})).status).toBe(202);
      }
      await eventually(async () => receiver.received.some((r) => r.path === path));
      const deleted = await admin.delete(`/api/v1/webhooks/${endpointId}`);
      expect(deleted.status, JSON.stringify(deleted.body)).toBe(204);
    });
  },
);
