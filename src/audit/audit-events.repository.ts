import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import type { ListQuery } from '../common/list-query.js';
import { DatabaseService } from '../database/database.service.js';
import { restPage } from '../database/page-reader.js';
import type { PageValue } from '../database/connection-value.js';
import type { AuditEvent } from './audit-event.js';

export interface AuditEventRow {
  id: string;
  at: string;
  actor_type: string;
  actor_id: string | null;
  on_behalf_of: string | null;
  action: string;
  target_type: string;
  target_id: string;
  changes: string;
  request_id: string | null;
  ip: string | null;
}

const COLUMNS =
  'id, at, actor_type, actor_id, on_behalf_of, action, target_type, target_id, changes, request_id, ip';

/** Entries counted together: same action, actor, target and minute of `at`. */
export interface AuditCountGroup {
  action: string;
  actorId: string | null;
  targetId: string;
  /** The minute (`YYYY-MM-DDTHH:MM`). */
  at: string;
  n: number;
}

export interface AuditEventFilter {
  actorId?: string;
  targetId?: string;
  action?: string;
  /** Only entries of one of these actions (what a partner app may read). */
  actions?: readonly string[];
  /** Strictly later than. */
  since?: string;
  /** Up to and including. */
  until?: string;
}

/**
 * The one owner of `audit_events`. Append-only: it inserts, reads, and deletes only entries older
 * than the retention (no update, no delete of one entry).
 */
@Injectable()
export class AuditEventsRepository {
  constructor(private readonly db: DatabaseService) {}

  /** Inserts an entry with the transaction's manager: it commits or rolls back with the change. */
  async insert(manager: EntityManager, event: AuditEvent): Promise<void> {
    const p = (n: number) => this.db.p(n);
    await manager.query(
      `INSERT INTO audit_events (${COLUMNS})
       VALUES (${p(1)}, ${p(2)}, ${p(3)}, ${p(4)}, ${p(5)}, ${p(6)}, ${p(7)}, ${p(8)}, ${p(9)}, ${p(10)}, ${p(11)})`,
      [
        event.id,
        event.at,
        event.actor.type,
        event.actor.id,
        event.on_behalf_of,
        event.action,
        event.target.type,
        event.target.id,
        JSON.stringify(event.changes),
        event.request_id,
        event.ip,
      ],
    );
  }

  /** Newest first (`at`, `id` descending); each filter is one index range (migration 1764400000024). */
  page(
    filter: AuditEventFilter,
    query: ListQuery,
    total: Promise<number>,
  ): Promise<PageValue<AuditEventRow>> {
    const params: unknown[] = [];
    return restPage<AuditEventRow>(
      this.db,
      {
        list: 'audit-events',
        columns: COLUMNS,
        from: 'audit_events',
        where: this.where(filter, params),
        params,
        sortColumns: { at: 'at' },
      },
      query,
      total,
    );
  }

  /** The number of entries a filter matches: a COUNT over its index range. */
  async count(filter: AuditEventFilter): Promise<number> {
    const params: unknown[] = [];
    const where = this.where(filter, params);
    const rows = await this.db.query<{ n: number | string }>(
      `SELECT COUNT(*) AS n FROM audit_events${where.length > 0 ? ` WHERE ${where.join(' AND ')}` : ''}`,
      params,
    );
    return Number(rows[0]?.n ?? 0);
  }

  /** The entries older than `before`, grouped by what their counters are (minute of `at`). */
  async groupsBefore(manager: EntityManager, before: string): Promise<AuditCountGroup[]> {
    const rows = await manager.query<
      {
        action: string;
        actor_id: string | null;
        target_id: string;
        at: string;
        n: number | string;
      }[]
    >(
      `SELECT action, actor_id, target_id, substr(at, 1, 16) AS at, COUNT(*) AS n FROM audit_events
        WHERE at < ${this.db.p(1)} GROUP BY action, actor_id, target_id, substr(at, 1, 16)`,
      [before],
    );
    return rows.map((r) => ({
      action: r.action,
      actorId: r.actor_id,
      targetId: r.target_id,
      at: r.at,
      n: Number(r.n),
    }));
  }

  /** Deletes the entries older than `before` (the retention; nothing else deletes an entry). */
  async deleteBefore(manager: EntityManager, before: string): Promise<void> {
    await manager.query(`DELETE FROM audit_events WHERE at < ${this.db.p(1)}`, [before]);
  }

  private where(filter: AuditEventFilter, params: unknown[]): string[] {
    const where: string[] = [];
    const bind = (v: unknown) => {
      params.push(v);
      return this.db.p(params.length);
    };
    if (filter.actorId !== undefined) {
      where.push(`actor_id = ${bind(filter.actorId)}`);
    }
    if (filter.targetId !== undefined) {
      where.push(`target_id = ${bind(filter.targetId)}`);
    }
    if (filter.action !== undefined) {
      where.push(`action = ${bind(filter.action)}`);
    }
    if (filter.actions !== undefined) {
      where.push(
        filter.actions.length === 0
          ? '1 = 0'
          : `action IN (${filter.actions.map((a) => bind(a)).join(', ')})`,
      );
    }
    if (filter.since !== undefined) {
      where.push(`at > ${bind(filter.since)}`);
    }
    if (filter.until !== undefined) {
      where.push(`at <= ${bind(filter.until)}`);
    }
    return where;
  }
}

export function auditEventFromRow(row: AuditEventRow): AuditEvent {
  return {
    id: row.id,
    at: row.at,
    actor: { type: row.actor_type as AuditEvent['actor']['type'], id: row.actor_id },
    on_behalf_of: row.on_behalf_of,
    action: row.action as AuditEvent['action'],
    target: { type: row.target_type, id: row.target_id },
    changes: JSON.parse(row.changes) as AuditEvent['changes'],
    request_id: row.request_id,
    ip: row.ip,
  };
}
