import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { newId } from '../common/ids.js';
import type { ListQuery } from '../common/list-query.js';
import { DatabaseService } from '../database/database.service.js';
import { restPage } from '../database/page-reader.js';
import type { PageValue } from '../database/connection-value.js';
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

/** A new delivery row: pending, due at once, no attempt made yet. */
export function pendingDelivery(
  endpointId: string,
  eventId: string,
  type: AnyWebhookEventType,
  now: string,
): WebhookDeliveryRow {
  return {
    id: newId('webhookDelivery'),
    endpoint_id: endpointId,
    event_id: eventId,
    type,
    status: 'pending',
    attempts: 0,
    last_status_code: null,
    last_duration_ms: null,
    last_error: null,
    next_attempt_at: now,
    lease_until: null,
    created_at: now,
    updated_at: now,
  };
}

const COLUMNS =
  'id, endpoint_id, event_id, type, status, attempts, last_status_code, last_duration_ms, last_error, next_attempt_at, lease_until, created_at, updated_at';

const COLUMN_COUNT_RANGE = Array.from({ length: 13 }, (_, i) => i);
const INSERT_CHUNK = 200;
const SUCCESS_CHUNK = 250;

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

  /** Inserts delivery rows, many to a statement (a fan-out writes thousands a second). */
  async insertMany(manager: EntityManager, rows: readonly WebhookDeliveryRow[]): Promise<void> {
    // 13 parameters a row: 200 rows stay far below SQLite's and PostgreSQL's parameter limits
    for (let start = 0; start < rows.length; start += INSERT_CHUNK) {
      const chunk = rows.slice(start, start + INSERT_CHUNK);
      const values: unknown[] = [];
      const tuples: string[] = [];
      for (const row of chunk) {
        const first = values.length;
        values.push(
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
        );
        tuples.push(`(${COLUMN_COUNT_RANGE.map((i) => this.p(first + i + 1)).join(', ')})`);
      }
      await manager.query(
        `INSERT INTO webhook_deliveries (${COLUMNS}) VALUES ${tuples.join(', ')}`,
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
   * Claims up to `limit` due pending deliveries for this instance until `leaseUntil`, oldest first:
   * none of the endpoints in `skipEndpoints`, at most `perEndpoint` of any other (ranked among the
   * 4 x `limit` oldest due rows). Rows whose lease ran out (an instance died mid-attempt) are due
   * again. One statement, so two instances never claim the same row (PostgreSQL skips rows another
   * claim has locked, and the outer condition is checked again on the row it updates).
   */
  async claimDue(
    now: string,
    leaseUntil: string,
    limit: number,
    share: { skipEndpoints?: readonly string[]; perEndpoint?: number } = {},
  ): Promise<WebhookDeliveryRow[]> {
    const skipEndpoints = share.skipEndpoints ?? [];
    const skip = this.db.dialect === 'postgres' ? ' FOR UPDATE SKIP LOCKED' : '';
    // numbered in the order they appear (SQLite binds its `?` by position)
    const params: unknown[] = [];
    const p = (value: unknown) => {
      params.push(value);
      return this.p(params.length);
    };
    const sql = `UPDATE webhook_deliveries SET lease_until = ${p(leaseUntil)}
        WHERE id IN (
          SELECT id FROM (
            SELECT id, next_attempt_at,
                   ROW_NUMBER() OVER (PARTITION BY endpoint_id ORDER BY next_attempt_at, id) AS n
              FROM (SELECT id, endpoint_id, next_attempt_at FROM webhook_deliveries
                     WHERE status = 'pending' AND next_attempt_at <= ${p(now)}
                       AND (lease_until IS NULL OR lease_until <= ${p(now)})${
                         skipEndpoints.length === 0
                           ? ''
                           : ` AND endpoint_id NOT IN (${skipEndpoints.map(p).join(', ')})`
                       }
                     ORDER BY next_attempt_at LIMIT ${p(limit * 4)}${skip}) candidates
          ) ranked
          WHERE n <= ${p(share.perEndpoint ?? limit)} ORDER BY next_attempt_at LIMIT ${p(limit)})
          AND (lease_until IS NULL OR lease_until <= ${p(now)})
       RETURNING ${COLUMNS}`;
    const result: unknown = await this.db.query(sql, params);
    return returnedRows<WebhookDeliveryRow>(result);
  }

  /**
   * Claims queued attempts (BullMQ jobs), many in one statement: each row only if it is still
   * pending at exactly the attempt number its job was queued for and nobody holds it.
   */
  async claimAttempts(
    jobs: readonly { id: string; attempts: number }[],
    now: string,
    leaseUntil: string,
  ): Promise<WebhookDeliveryRow[]> {
    if (jobs.length === 0) {
      return [];
    }
    const pairs = jobs.map(
      (_, i) => `(id = ${this.p(2 * i + 3)} AND attempts = ${this.p(2 * i + 4)})`,
    );
    const result: unknown = await this.db.query(
      `UPDATE webhook_deliveries SET lease_until = ${this.p(1)}
        WHERE status = 'pending' AND (lease_until IS NULL OR lease_until <= ${this.p(2)})
          AND (${pairs.join(' OR ')})
       RETURNING ${COLUMNS}`,
      [leaseUntil, now, ...jobs.flatMap((j) => [j.id, j.attempts])],
    );
    return returnedRows<WebhookDeliveryRow>(result);
  }

  /** Pending deliveries due before `dueBefore` that nobody holds (queued jobs lost with a crash). */
  async unclaimedDue(
    now: string,
    dueBefore: string,
    limit: number,
  ): Promise<Pick<WebhookDeliveryRow, 'id' | 'attempts' | 'endpoint_id'>[]> {
    return this.db.query(
      `SELECT id, attempts, endpoint_id FROM webhook_deliveries
        WHERE status = 'pending' AND next_attempt_at <= ${this.p(1)}
          AND (lease_until IS NULL OR lease_until <= ${this.p(2)})
        ORDER BY next_attempt_at LIMIT ${this.p(3)}`,
      [dueBefore, now, limit],
    );
  }

  /**
   * Extends the leases of rows whose outcome this instance holds but could not write yet (the
   * outcome writer), so that no instance claims them again meanwhile.
   */
  async extendLeases(ids: readonly string[], leaseUntil: string): Promise<void> {
    for (let start = 0; start < ids.length; start += SUCCESS_CHUNK) {
      const chunk = ids.slice(start, start + SUCCESS_CHUNK);
      await this.db.query(
        `UPDATE webhook_deliveries SET lease_until = ${this.p(1)}
          WHERE status = 'pending' AND id IN (${chunk.map((_, i) => this.p(i + 2)).join(', ')})`,
        [leaseUntil, ...chunk],
      );
    }
  }

  /**
   * Successful attempts, recorded in one statement (each row with its own answer). `attempts` is
   * the count the row had when the attempt was claimed: a row already past it (this outcome was
   * written before, its commit's answer lost with the connection) is left alone.
   */
  async recordSuccesses(
    manager: EntityManager,
    entries: readonly { id: string; attempts: number; result: AttemptResult; at: string }[],
  ): Promise<void> {
    for (let start = 0; start < entries.length; start += SUCCESS_CHUNK) {
      const chunk = entries.slice(start, start + SUCCESS_CHUNK);
      // typed in the first row: PostgreSQL infers the other rows' parameters from it
      const tuples = chunk.map((_, i) =>
        i === 0
          ? `(CAST(${this.p(1)} AS VARCHAR(30)), CAST(${this.p(2)} AS INTEGER), CAST(${this.p(3)} AS INTEGER), CAST(${this.p(4)} AS INTEGER), CAST(${this.p(5)} AS VARCHAR(24)))`
          : `(${[1, 2, 3, 4, 5].map((n) => this.p(5 * i + n)).join(', ')})`,
      );
      await manager.query(
        `WITH done (id, attempts, code, ms, at) AS (VALUES ${tuples.join(', ')})
         UPDATE webhook_deliveries SET status = 'succeeded', attempts = webhook_deliveries.attempts + 1,
                last_status_code = done.code, last_duration_ms = done.ms, last_error = NULL,
                next_attempt_at = NULL, lease_until = NULL, updated_at = done.at
           FROM done
          WHERE webhook_deliveries.id = done.id AND webhook_deliveries.status = 'pending'
            AND webhook_deliveries.attempts = done.attempts`,
        chunk.flatMap(({ id, attempts, result, at }) => [
          id,
          attempts,
          result.statusCode,
          result.durationMs,
          at,
        ]),
      );
    }
  }

  /**
   * A failed attempt: retried at `nextAttemptAt`, or failed for good when it is null. `attempts` as
   * in `recordSuccesses`: written once only.
   */
  async recordFailure(
    manager: EntityManager,
    id: string,
    attempts: number,
    result: AttemptResult,
    nextAttemptAt: string | null,
    at: string,
  ): Promise<void> {
    await manager.query(
      `UPDATE webhook_deliveries SET status = ${this.p(1)}, attempts = attempts + 1,
              last_status_code = ${this.p(2)}, last_duration_ms = ${this.p(3)}, last_error = ${this.p(4)},
              next_attempt_at = ${this.p(5)}, lease_until = NULL, updated_at = ${this.p(6)}
        WHERE id = ${this.p(7)} AND status = 'pending' AND attempts = ${this.p(8)}`,
      [
        nextAttemptAt === null ? 'failed' : 'pending',
        result.statusCode,
        result.durationMs,
        result.error?.slice(0, 500) ?? null,
        nextAttemptAt,
        at,
        id,
        attempts,
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

  async page(endpointId: string, query: ListQuery): Promise<PageValue<WebhookDeliveryRow>> {
    const [count] = await this.db.query<{ n: number | string }>(
      `SELECT COUNT(*) AS n FROM webhook_deliveries WHERE endpoint_id = ${this.p(1)}`,
      [endpointId],
    );
    return restPage<WebhookDeliveryRow>(
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
