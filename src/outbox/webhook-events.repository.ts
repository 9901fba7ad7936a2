import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { DatabaseService } from '../database/database.service.js';
import { returnedRows, type AnyWebhookEventType } from './webhook-types.js';

/** One outbox row: an event as it happened, before it is fanned out to the endpoints. */
export interface WebhookEventRow {
  id: string;
  type: AnyWebhookEventType;
  /** The user the event is about (the user, the post's author, the order's owner, the sender). */
  user_id: string | null;
  /** JSON of `data.object`: the REST representation an ADMIN reads. */
  payload: string;
  created_at: string;
  dispatched_at: string | null;
  /** W3C `traceparent` of the request that made the change, when it was traced. */
  traceparent: string | null;
}

const COLUMNS = 'id, type, user_id, payload, created_at, dispatched_at, traceparent';

/** The outbox (`webhook_events`): written in the transaction of each change, fanned out afterwards. */
@Injectable()
export class WebhookEventsRepository {
  constructor(private readonly db: DatabaseService) {}

  private p(n: number): string {
    return this.db.p(n);
  }

  async insert(manager: EntityManager, row: WebhookEventRow): Promise<void> {
    await manager.query(
      `INSERT INTO webhook_events (${COLUMNS}) VALUES (${[1, 2, 3, 4, 5, 6, 7].map((n) => this.p(n)).join(', ')})`,
      [
        row.id,
        row.type,
        row.user_id,
        row.payload,
        row.created_at,
        row.dispatched_at,
        row.traceparent,
      ],
    );
  }

  async find(id: string): Promise<WebhookEventRow | undefined> {
    const rows = await this.db.query<WebhookEventRow>(
      `SELECT ${COLUMNS} FROM webhook_events WHERE id = ${this.p(1)}`,
      [id],
    );
    return rows[0];
  }

  async findMany(ids: readonly string[]): Promise<WebhookEventRow[]> {
    if (ids.length === 0) {
      return [];
    }
    return this.db.query<WebhookEventRow>(
      `SELECT ${COLUMNS} FROM webhook_events WHERE id IN (${ids.map((_, i) => this.p(i + 1)).join(', ')})`,
      [...ids],
    );
  }

  /** The oldest events not yet fanned out (committed by any instance). */
  async undispatched(limit: number): Promise<WebhookEventRow[]> {
    return this.db.query<WebhookEventRow>(
      `SELECT ${COLUMNS} FROM webhook_events WHERE dispatched_at IS NULL
        ORDER BY created_at LIMIT ${this.p(1)}`,
      [limit],
    );
  }

  /**
   * Marks events fanned out unless another instance already did: the ids this call marked (one
   * statement for a batch; each event goes to whoever marks it first).
   */
  async markManyDispatched(
    manager: EntityManager,
    ids: readonly string[],
    at: string,
  ): Promise<Set<string>> {
    if (ids.length === 0) {
      return new Set();
    }
    const result: unknown = await manager.query(
      `UPDATE webhook_events SET dispatched_at = ${this.p(1)}
        WHERE id IN (${ids.map((_, i) => this.p(i + 2)).join(', ')}) AND dispatched_at IS NULL
       RETURNING id`,
      [at, ...ids],
    );
    return new Set(returnedRows<{ id: string }>(result).map((r) => r.id));
  }

  async deleteMany(manager: EntityManager, ids: readonly string[]): Promise<void> {
    if (ids.length > 0) {
      await manager.query(
        `DELETE FROM webhook_events WHERE id IN (${ids.map((_, i) => this.p(i + 1)).join(', ')})`,
        [...ids],
      );
    }
  }

  async countUndispatched(): Promise<number> {
    const [row] = await this.db.query<{ n: number | string }>(
      'SELECT COUNT(*) AS n FROM webhook_events WHERE dispatched_at IS NULL',
    );
    return Number(row?.n ?? 0);
  }

  /** Fanned-out events older than `before` that no delivery row refers to any more. */
  async purge(before: string): Promise<void> {
    await this.db.query(
      `DELETE FROM webhook_events WHERE created_at < ${this.p(1)} AND dispatched_at IS NOT NULL
         AND NOT EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.event_id = webhook_events.id)`,
      [before],
    );
  }
}
