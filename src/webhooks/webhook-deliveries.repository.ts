import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import type { ListQuery } from '../common/list-query.js';
import { DatabaseService } from '../database/database.service.js';
import { listPage, type ListPage } from '../database/list-page.js';
import {
  returnedRows,
  type AnyWebhookEventType,
  type DeliveryStatus,
} from '../outbox/webhook-types.js';

export interface WebhookDeliveryRow {
  id: string;
  endpoint_id: string;
  event_id: string;
  type: AnyWebhookEventType;
  status: DeliveryStatus;
  attempts: number | string;
  last_status_code: number | string | null;
  last_duration_ms: number | string | null;
  last_error: string | null;
  next_attempt_at: string | null;
  lease_until: string | null;
  created_at: string;
  updated_at: string;
}

const COLUMNS =
  'id, endpoint_id, event_id, type, status, attempts, last_status_code, last_duration_ms, last_error, next_attempt_at, lease_until, created_at, updated_at';

/** What one attempt left behind. */
export interface AttemptResult {
  statusCode: number | null;
  durationMs: number;
  error: string | null;
}

/** Every statement on `webhook_deliveries`: one row per (event, endpoint), claimed with a lease. */
@Injectable()
export class WebhookDeliveriesRepository {
  constructor(private readonly db: DatabaseService) {}

  private p(n: number): string {
    return this.db.p(n);
  }

  async insertMany(manager: EntityManager, rows: readonly WebhookDeliveryRow[]): Promise<void> {
    for (const row of rows) {
      const values = [
        row.id,
        row.endpoint_id,
        row.event_id,
        row.type,
        row.status,
        Number(row.attempts),
        row.last_status_code,
        row.last_duration_ms,
        row.last_error,
        row.next_attempt_at,
        row.lease_until,
        row.created_at,
        row.updated_at,
      ];
      await manager.query(
        `INSERT INTO webhook_deliveries (${COLUMNS}) VALUES (${values.map((_, i) => this.p(i + 1)).join(', ')})`,
        values,
      );
    }
  }

  async find(endpointId: string, id: string): Promise<WebhookDeliveryRow | undefined> {
    const rows = await this.db.query<WebhookDeliveryRow>(
      `SELECT ${COLUMNS} FROM webhook_deliveries WHERE id = ${this.p(1)} AND endpoint_id = ${this.p(2)}`,
      [id, endpointId],
    );
    return rows[0];
  }

  async findById(id: string): Promise<WebhookDeliveryRow | undefined> {
    const rows = await this.db.query<WebhookDeliveryRow>(
      `SELECT ${COLUMNS} FROM webhook_deliveries WHERE id = ${this.p(1)}`,
      [id],
    );
    return rows[0];
  }

  /**
   * Claims up to `limit` due pending deliveries for this instance until `leaseUntil`: rows whose
   * lease ran out (an instance died mid-attempt) are due again. One statement, so two instances never
   * claim the same row (PostgreSQL skips rows another claim has locked).
   */
  async claimDue(now: string, leaseUntil: string, limit: number): Promise<WebhookDeliveryRow[]> {
    const skip = this.db.dialect === 'postgres' ? ' FOR UPDATE SKIP LOCKED' : '';
    const result = await this.db.transaction(({ manager }) =>
      manager.query(
        `UPDATE webhook_deliveries SET lease_until = ${this.p(1)}
          WHERE id IN (SELECT id FROM webhook_deliveries
                        WHERE status = 'pending' AND next_attempt_at <= ${this.p(2)}
                          AND (lease_until IS NULL OR lease_until <= ${this.p(3)})
                        ORDER BY next_attempt_at LIMIT ${this.p(4)}${skip})
            AND (lease_until IS NULL OR lease_until <= ${this.p(5)})
         RETURNING ${COLUMNS}`,
        [leaseUntil, now, now, limit, now],
      ),
    );
    return returnedRows<WebhookDeliveryRow>(result);
  }

  /** Claims one attempt (a queued job): only if still pending at that attempt number and unleased. */
  async claimAttempt(
    id: string,
    attempts: number,
    now: string,
    leaseUntil: string,
  ): Promise<WebhookDeliveryRow | undefined> {
    const result = await this.db.transaction(({ manager }) =>
      manager.query(
        `UPDATE webhook_deliveries SET lease_until = ${this.p(1)}
          WHERE id = ${this.p(2)} AND status = 'pending' AND attempts = ${this.p(3)}
            AND (lease_until IS NULL OR lease_until <= ${this.p(4)})
         RETURNING ${COLUMNS}`,
        [leaseUntil, id, attempts, now],
      ),
    );
    return returnedRows<WebhookDeliveryRow>(result)[0];
  }

  /** Pending deliveries due before `dueBefore` that nobody holds (queued jobs lost with a crash). */
  async unclaimedDue(
    now: string,
    dueBefore: string,
    limit: number,
  ): Promise<Pick<WebhookDeliveryRow, 'id' | 'attempts'>[]> {
    return this.db.query(
      `SELECT id, attempts FROM webhook_deliveries
        WHERE status = 'pending' AND next_attempt_at <= ${this.p(1)}
          AND (lease_until IS NULL OR lease_until <= ${this.p(2)})
        ORDER BY next_attempt_at LIMIT ${this.p(3)}`,
      [dueBefore, now, limit],
    );
  }

  /** Successful attempts, recorded in one transaction. */
  async recordSuccesses(
    entries: readonly { id: string; result: AttemptResult; at: string }[],
  ): Promise<void> {
    if (entries.length === 0) {
      return;
    }
    await this.db.transaction(async ({ manager }) => {
      for (const { id, result, at } of entries) {
        await manager.query(
          `UPDATE webhook_deliveries SET status = 'succeeded', attempts = attempts + 1,
                  last_status_code = ${this.p(1)}, last_duration_ms = ${this.p(2)}, last_error = NULL,
                  next_attempt_at = NULL, lease_until = NULL, updated_at = ${this.p(3)}
            WHERE id = ${this.p(4)} AND status = 'pending'`,
          [result.statusCode, result.durationMs, at, id],
        );
      }
    });
  }

  /** A failed attempt: retried at `nextAttemptAt`, or failed for good when it is null. */
  async recordFailure(
    id: string,
    result: AttemptResult,
    nextAttemptAt: string | null,
    at: string,
  ): Promise<void> {
    await this.db.query(
      `UPDATE webhook_deliveries SET status = ${this.p(1)}, attempts = attempts + 1,
              last_status_code = ${this.p(2)}, last_duration_ms = ${this.p(3)}, last_error = ${this.p(4)},
              next_attempt_at = ${this.p(5)}, lease_until = NULL, updated_at = ${this.p(6)}
        WHERE id = ${this.p(7)} AND status = 'pending'`,
      [
        nextAttemptAt === null ? 'failed' : 'pending',
        result.statusCode,
        result.durationMs,
        result.error?.slice(0, 500) ?? null,
        nextAttemptAt,
        at,
        id,
      ],
    );
  }

  /** Ends a delivery without an attempt (endpoint disabled or deleted, grant revoked). */
  async abandon(id: string, reason: string, at: string): Promise<void> {
    await this.db.query(
      `UPDATE webhook_deliveries SET status = 'failed', last_error = COALESCE(last_error, ${this.p(1)}), next_attempt_at = NULL,
              lease_until = NULL, updated_at = ${this.p(2)}
        WHERE id = ${this.p(3)} AND status = 'pending'`,
      [reason.slice(0, 500), at, id],
    );
  }

  /** Every pending delivery of an endpoint fails (the endpoint was disabled). */
  async abandonEndpoint(manager: EntityManager, endpointId: string, reason: string, at: string) {
    await manager.query(
      `UPDATE webhook_deliveries SET status = 'failed', last_error = COALESCE(last_error, ${this.p(1)}), next_attempt_at = NULL,
              lease_until = NULL, updated_at = ${this.p(2)}
        WHERE endpoint_id = ${this.p(3)} AND status = 'pending'`,
      [reason.slice(0, 500), at, endpointId],
    );
  }

  async deleteOfEndpoint(manager: EntityManager, endpointId: string): Promise<void> {
    await manager.query(`DELETE FROM webhook_deliveries WHERE endpoint_id = ${this.p(1)}`, [
      endpointId,
    ]);
  }

  async countPending(): Promise<number> {
    const [row] = await this.db.query<{ n: number | string }>(
      "SELECT COUNT(*) AS n FROM webhook_deliveries WHERE status = 'pending'",
    );
    return Number(row?.n ?? 0);
  }

  async page(endpointId: string, query: ListQuery): Promise<ListPage<WebhookDeliveryRow>> {
    const [count] = await this.db.query<{ n: number | string }>(
      `SELECT COUNT(*) AS n FROM webhook_deliveries WHERE endpoint_id = ${this.p(1)}`,
      [endpointId],
    );
    return listPage<WebhookDeliveryRow>(
      this.db,
      {
        list: 'webhook_deliveries',
        columns: COLUMNS,
        from: 'webhook_deliveries',
        where: [`endpoint_id = ${this.p(1)}`],
        params: [endpointId],
        sortColumns: { created_at: 'created_at' },
      },
      query,
      Promise.resolve(Number(count?.n ?? 0)),
    );
  }

  /** Finished deliveries created before `before` (the log's retention). */
  async purge(before: string): Promise<void> {
    await this.db.query(
      `DELETE FROM webhook_deliveries WHERE created_at < ${this.p(1)} AND status <> 'pending'`,
      [before],
    );
  }
}
