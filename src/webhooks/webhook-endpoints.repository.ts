import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import type { ListQuery } from '../common/list-query.js';
import { DatabaseService } from '../database/database.service.js';
import { listPage, type ListPage } from '../database/paging.js';

export interface WebhookEndpointRow {
  id: string;
  url: string;
  description: string | null;
  /** JSON array of event types. */
  events: string;
  oauth_client_id: string | null;
  active: number | boolean;
  disabled_reason: string | null;
  secret: string;
  previous_secret: string | null;
  previous_secret_expires_at: string | null;
  failing_since: string | null;
  created_at: string;
  updated_at: string;
}

const COLUMNS =
  'id, url, description, events, oauth_client_id, active, disabled_reason, secret, previous_secret, previous_secret_expires_at, failing_since, created_at, updated_at';

/** Columns a change may set. */
export type EndpointChanges = Partial<
  Pick<
    WebhookEndpointRow,
    | 'url'
    | 'description'
    | 'events'
    | 'active'
    | 'disabled_reason'
    | 'secret'
    | 'previous_secret'
    | 'previous_secret_expires_at'
    | 'failing_since'
    | 'updated_at'
  >
>;

/** Every statement on `webhook_endpoints`. */
@Injectable()
export class WebhookEndpointsRepository {
  constructor(private readonly db: DatabaseService) {}

  private p(n: number): string {
    return this.db.p(n);
  }

  async insert(manager: EntityManager, row: WebhookEndpointRow): Promise<void> {
    const values = [
      row.id,
      row.url,
      row.description,
      row.events,
      row.oauth_client_id,
      row.active ? 1 : 0,
      row.disabled_reason,
      row.secret,
      row.previous_secret,
      row.previous_secret_expires_at,
      row.failing_since,
      row.created_at,
      row.updated_at,
    ];
    await manager.query(
      `INSERT INTO webhook_endpoints (${COLUMNS}) VALUES (${values.map((_, i) => this.p(i + 1)).join(', ')})`,
      values,
    );
  }

  async find(id: string): Promise<WebhookEndpointRow | undefined> {
    const rows = await this.db.query<WebhookEndpointRow>(
      `SELECT ${COLUMNS} FROM webhook_endpoints WHERE id = ${this.p(1)}`,
      [id],
    );
    return rows[0];
  }

  async findMany(ids: readonly string[]): Promise<WebhookEndpointRow[]> {
    if (ids.length === 0) {
      return [];
    }
    return this.db.query<WebhookEndpointRow>(
      `SELECT ${COLUMNS} FROM webhook_endpoints WHERE id IN (${ids.map((_, i) => this.p(i + 1)).join(', ')})`,
      [...ids],
    );
  }

  /** The row inside a transaction, locked until it ends on PostgreSQL. */
  async findLocked(manager: EntityManager, id: string): Promise<WebhookEndpointRow | undefined> {
    const lock = this.db.dialect === 'postgres' ? ' FOR UPDATE' : '';
    const rows = await manager.query<WebhookEndpointRow[]>(
      `SELECT ${COLUMNS} FROM webhook_endpoints WHERE id = ${this.p(1)}${lock}`,
      [id],
    );
    return rows[0];
  }

  /**
   * Locks these endpoint rows until the transaction ends, in id order (PostgreSQL; SQLite's
   * transactions already run one at a time). Rows deleted meanwhile are skipped.
   */
  async lockMany(manager: EntityManager, ids: readonly string[]): Promise<void> {
    if (this.db.dialect !== 'postgres' || ids.length === 0) {
      return;
    }
    await manager.query(
      'SELECT id FROM webhook_endpoints WHERE id = ANY($1) ORDER BY id FOR UPDATE',
      [[...new Set(ids)]],
    );
  }

  /** Active endpoints, for the fan-out of events. */
  async active(): Promise<WebhookEndpointRow[]> {
    return this.db.query<WebhookEndpointRow>(
      `SELECT ${COLUMNS} FROM webhook_endpoints WHERE active = 1`,
    );
  }

  async update(manager: EntityManager, id: string, changes: EndpointChanges): Promise<void> {
    const entries = Object.entries(changes).filter(([, v]) => v !== undefined);
    if (entries.length === 0) {
      return;
    }
    const values = entries.map(([, v]) => (typeof v === 'boolean' ? (v ? 1 : 0) : v));
    await manager.query(
      `UPDATE webhook_endpoints SET ${entries.map(([k], i) => `${k} = ${this.p(i + 1)}`).join(', ')}
        WHERE id = ${this.p(entries.length + 1)}`,
      [...values, id],
    );
  }

  /** Starts the failure clock unless it runs already; returns when it started. */
  async markFailing(manager: EntityManager, id: string, at: string): Promise<string> {
    await manager.query(
      `UPDATE webhook_endpoints SET failing_since = ${this.p(1)} WHERE id = ${this.p(2)} AND failing_since IS NULL`,
      [at, id],
    );
    const [row] = await manager.query<{ failing_since: string | null }[]>(
      `SELECT failing_since FROM webhook_endpoints WHERE id = ${this.p(1)}`,
      [id],
    );
    return row?.failing_since ?? at;
  }

  async clearFailing(manager: EntityManager, ids: readonly string[]): Promise<void> {
    if (ids.length > 0) {
      await manager.query(
        `UPDATE webhook_endpoints SET failing_since = NULL
          WHERE id IN (${ids.map((_, i) => this.p(i + 1)).join(', ')}) AND failing_since IS NOT NULL`,
        [...ids],
      );
    }
  }

  async delete(manager: EntityManager, id: string): Promise<void> {
    await manager.query(`DELETE FROM webhook_endpoints WHERE id = ${this.p(1)}`, [id]);
  }

  async page(query: ListQuery): Promise<ListPage<WebhookEndpointRow>> {
    const [count] = await this.db.query<{ n: number | string }>(
      'SELECT COUNT(*) AS n FROM webhook_endpoints',
    );
    return listPage<WebhookEndpointRow>(
      this.db,
      {
        list: 'webhooks',
        columns: COLUMNS,
        from: 'webhook_endpoints',
        where: [],
        params: [],
        sortColumns: { created_at: 'created_at' },
      },
      query,
      Promise.resolve(Number(count?.n ?? 0)),
    );
  }
}
