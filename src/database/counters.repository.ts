import { Injectable } from '@nestjs/common';
import { DatabaseService, type TxContext } from './database.service.js';
import { CALENDAR_PREFIXES, type CalendarKey } from './calendar-counts.js';
import { addCreated, addTotal, ORDER_RANGE_RECOUNT_SQL } from './order-range-keys.js';
import { SqlTexts } from './sql-texts.js';

/** Counter rows per upsert statement when a transaction's deltas are written. */
const FLUSH_CHUNK = 400;

/**
 * Row counts behind `meta.total` and `totalCount`, one row per list and filter (`list_counts`), so a
 * total costs one primary-key read at any size instead of a COUNT(*) over the matching rows.
 *
 * Every write that changes what a list contains (insert, soft delete, role or status change) adds its
 * deltas in the SAME transaction through `add()`. The deltas of a transaction are merged and written
 * just before it commits, in one statement, keys in sorted order: the hot rows (`users`, `posts`,
 * `rooms`) are locked only from that statement to the commit, and two transactions always lock
 * counter rows in the same order, so they queue instead of deadlocking. The statement is an atomic
 * `INSERT … ON CONFLICT DO UPDATE SET n = n + excluded.n` (both dialects), so concurrent increments
 * never lose an update. `reconcile()` recounts from the tables (`npm run counts:check [-- --fix]`).
 *
 * This class is the only code that reads or writes `list_counts`.
 */
@Injectable()
export class CountersRepository {
  private readonly pending = new WeakMap<TxContext, Map<string, number>>();
  /** `getMany`'s texts, by how many keys they read (sql-texts.ts). */
  private readonly texts = new SqlTexts();

  constructor(private readonly db: DatabaseService) {}

  /** Adds `deltas` (key -> +n/-n) to the counters when `tx` commits; nothing if it rolls back. */
  add(tx: TxContext, deltas: Record<string, number>): void {
    let merged = this.pending.get(tx);
    if (!merged) {
      merged = new Map();
      this.pending.set(tx, merged);
      const forTx = merged;
      tx.beforeCommit(() => this.flush(tx, forTx));
    }
    for (const [key, delta] of Object.entries(deltas)) {
      merged.set(key, (merged.get(key) ?? 0) + delta);
    }
  }

  /** One counter (0 when no row was ever counted under that key). */
  async get(key: string): Promise<number> {
    const rows = await this.db.query<{ n: number | string }>(
      `SELECT n FROM list_counts WHERE scope = ${this.db.p(1)}`,
      [key],
    );
    return Number(rows[0]?.n ?? 0);
  }

  /** Many counters in one statement (DataLoader batches); missing keys are 0. */
  async getMany(keys: readonly string[]): Promise<Map<string, number>> {
    const counts = new Map<string, number>(keys.map((k) => [k, 0]));
    if (keys.length === 0) {
      return counts;
    }
    const sql = this.texts.get(
      String(keys.length),
      () =>
        `SELECT scope, n FROM list_counts WHERE scope IN (${keys.map((_, i) => this.db.p(i + 1)).join(', ')})`,
    );
    const rows = await this.db.query<{ scope: string; n: number | string }>(sql, [...keys]);
    for (const row of rows) {
      counts.set(row.scope, Number(row.n));
    }
    return counts;
  }

  /**
   * A user is being soft-deleted in `tx`: its orders leave the list across users (they disappear
   * with their user), so the global order counters lose the user's per-user counts, and the range
   * counters (order-range-keys.ts) the user's orders, grouped by minute and by total.
   */
  async forgetOrdersOfUser(tx: TxContext, userId: string): Promise<void> {
    const prefix = CountKeys.ordersOfUser(userId);
    const rows = await tx.manager.query<{ scope: string; n: number | string }[]>(
      `SELECT scope, n FROM list_counts WHERE scope = ${this.db.p(1)} OR scope LIKE ${this.db.p(2)}`,
      [prefix, `${prefix}:status:%`],
    );
    const deltas: Record<string, number> = {};
    for (const row of rows) {
      const n = Number(row.n);
      if (row.scope === prefix) {
        deltas[CountKeys.orders()] = -n;
      } else {
        deltas[CountKeys.ordersByStatus(row.scope.slice(prefix.length + ':status:'.length))] = -n;
      }
    }
    const byMinute = await tx.manager.query<
      { status: string; minute: string; n: number | string }[]
    >(
      `SELECT status, substr(created_at, 1, 16) AS minute, COUNT(*) AS n FROM orders
        WHERE user_id = ${this.db.p(1)} GROUP BY status, substr(created_at, 1, 16)`,
      [userId],
    );
    for (const row of byMinute) {
      for (const status of [undefined, row.status]) {
        addCreated(deltas, status, row.minute, -Number(row.n));
      }
    }
    const byTotal = await tx.manager.query<
      { status: string; total_cents: number | string; n: number | string }[]
    >(
      `SELECT status, total_cents, COUNT(*) AS n FROM orders
        WHERE user_id = ${this.db.p(1)} GROUP BY status, total_cents`,
      [userId],
    );
    for (const row of byTotal) {
      for (const status of [undefined, row.status]) {
        addTotal(deltas, status, Number(row.total_cents), -Number(row.n));
      }
    }
    this.add(tx, deltas);
  }

  /**
   * Compares every counter with a COUNT(*) of the tables (the same queries the migration backfilled
   * with) and, with `fix`, rewrites the counters that differ. With `fix` on PostgreSQL the counters
   * table is locked against writers for the recount, so a write committed meanwhile is not lost.
   */
  async reconcile(fix: boolean): Promise<CounterMismatch[]> {
    return this.db.transaction(async ({ manager }) => {
      if (fix && this.db.dialect === 'postgres') {
        await manager.query('LOCK TABLE list_counts IN EXCLUSIVE MODE');
      }
      const expected = new Map<string, number>();
      for (const sql of RECOUNT_SQL) {
        const rows = await manager.query<{ scope: string; n: number | string }[]>(sql);
        for (const row of rows) {
          expected.set(row.scope, Number(row.n));
        }
      }
      const stored = new Map<string, number>();
      const rows = await manager.query<{ scope: string; n: number | string }[]>(
        'SELECT scope, n FROM list_counts',
      );
      for (const row of rows) {
        stored.set(row.scope, Number(row.n));
      }
      const mismatches: CounterMismatch[] = [];
      for (const key of new Set([...expected.keys(), ...stored.keys()])) {
        const want = expected.get(key) ?? 0;
        const have = stored.get(key) ?? 0;
        if (want !== have) {
          mismatches.push({ key, stored: have, actual: want });
        }
      }
      mismatches.sort((a, b) => (a.key < b.key ? -1 : 1));
      if (fix) {
        for (const m of mismatches) {
          await manager.query(
            `INSERT INTO list_counts (scope, n) VALUES (${this.db.p(1)}, ${this.db.p(2)})
             ON CONFLICT (scope) DO UPDATE SET n = excluded.n`,
            [m.key, m.actual],
          );
        }
      }
      return mismatches;
    });
  }

  private async flush(tx: TxContext, merged: Map<string, number>): Promise<void> {
    this.pending.delete(tx);
    const entries = [...merged.entries()]
      .filter(([, delta]) => delta !== 0)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    if (entries.length === 0) {
      return;
    }
    // in key order across statements too: a user's deletion can move thousands of range counters
    for (let start = 0; start < entries.length; start += FLUSH_CHUNK) {
      const params: unknown[] = [];
      const values = entries.slice(start, start + FLUSH_CHUNK).map(([key, delta]) => {
        params.push(key, delta);
        return `(${this.db.p(params.length - 1)}, ${this.db.p(params.length)})`;
      });
      await tx.manager.query(
        `INSERT INTO list_counts (scope, n) VALUES ${values.join(', ')}
         ON CONFLICT (scope) DO UPDATE SET n = list_counts.n + excluded.n`,
        params,
      );
    }
  }
}

/**
 * Writes the counters `recount` yields (`scope, n` rows), replacing any already there: a migration
 * adding counters to a database whose `list_counts` exists (a fresh database may have counted them
 * already, with the current TABLE_RECOUNT_SQL).
 */
export async function backfillCounters(
  q: { query(sql: string): Promise<unknown> },
  recount: readonly string[],
): Promise<void> {
  for (const sql of recount) {
    await q.query(
      `INSERT INTO list_counts (scope, n) SELECT scope, n FROM (${sql}) counted WHERE true
       ON CONFLICT (scope) DO UPDATE SET n = excluded.n`,
    );
  }
}

export interface CounterMismatch {
  key: string;
  stored: number;
  actual: number;
}

/** The counter keys: one per list and filter the API offers a total for. */
export const CountKeys = {
  users: () => 'users',
  usersByRole: (role: string) => `users:role:${role}`,
  posts: () => 'posts',
  postsByAuthor: (authorId: string) => `posts:author:${authorId}`,
  ordersOfUser: (userId: string) => `orders:user:${userId}`,
  ordersOfUserByStatus: (userId: string, status: string) =>
    `orders:user:${userId}:status:${status}`,
  /** Orders of live users (the list across users), and per status. */
  orders: () => 'orders',
  ordersByStatus: (status: string) => `orders:status:${status}`,
  rooms: () => 'rooms',
  messagesOfRoom: (roomId: string) => `messages:room:${roomId}`,
  /** Audit entries (docs/admin.md "Audit log"): all, by action, by actor, by target. */
  audit: () => 'audit',
  auditByAction: (action: string) => `audit:action:${action}`,
  auditByActor: (actorId: string) => `audit:actor:${actorId}`,
  auditByTarget: (targetId: string) => `audit:target:${targetId}`,
  /** Audit entries (of `action`, or all) by the calendar units of `at` (calendar-counts.ts). */
  auditAt: (action?: string): CalendarKey => {
    const base = action ? `audit:action:${action}:at:` : 'audit:at:';
    return (prefix) => base + prefix;
  },
};

/** The counters of the orders list across users: orders of live users (migration 1764400000024). */
export const ADMIN_RECOUNT_SQL: readonly string[] = [
  `SELECT 'orders' AS scope, COUNT(*) AS n FROM orders o JOIN users u ON u.id = o.user_id WHERE u.deleted_at IS NULL`,
  `SELECT 'orders:status:' || o.status AS scope, COUNT(*) AS n FROM orders o JOIN users u ON u.id = o.user_id WHERE u.deleted_at IS NULL GROUP BY o.status`,
];

/** The audit log's counters (migration 1764500000001 backfilled them). */
export const AUDIT_RECOUNT_SQL: readonly string[] = [
  `SELECT 'audit' AS scope, COUNT(*) AS n FROM audit_events`,
  `SELECT 'audit:action:' || action AS scope, COUNT(*) AS n FROM audit_events GROUP BY action`,
  `SELECT 'audit:actor:' || actor_id AS scope, COUNT(*) AS n FROM audit_events WHERE actor_id IS NOT NULL GROUP BY actor_id`,
  `SELECT 'audit:target:' || target_id AS scope, COUNT(*) AS n FROM audit_events GROUP BY target_id`,
  ...CALENDAR_PREFIXES.flatMap((length) => [
    `SELECT 'audit:at:' || substr(at, 1, ${length}) AS scope, COUNT(*) AS n FROM audit_events
      GROUP BY substr(at, 1, ${length})`,
    `SELECT 'audit:action:' || action || ':at:' || substr(at, 1, ${length}) AS scope, COUNT(*) AS n
       FROM audit_events GROUP BY action, substr(at, 1, ${length})`,
  ]),
];

/**
 * What each counter of the tables that existed when `list_counts` was made must equal: `scope, n`
 * rows, dialect-neutral SQL (`||` concatenates on both). Migration 1764000000000 backfills with these.
 */
export const TABLE_RECOUNT_SQL: readonly string[] = [
  `SELECT 'users' AS scope, COUNT(*) AS n FROM users WHERE deleted_at IS NULL`,
  `SELECT 'users:role:' || role AS scope, COUNT(*) AS n FROM users WHERE deleted_at IS NULL GROUP BY role`,
  `SELECT 'posts' AS scope, COUNT(*) AS n FROM posts WHERE deleted_at IS NULL`,
  `SELECT 'posts:author:' || author_id AS scope, COUNT(*) AS n FROM posts WHERE deleted_at IS NULL GROUP BY author_id`,
  `SELECT 'orders:user:' || user_id AS scope, COUNT(*) AS n FROM orders GROUP BY user_id`,
  `SELECT 'orders:user:' || user_id || ':status:' || status AS scope, COUNT(*) AS n FROM orders GROUP BY user_id, status`,
  ...ADMIN_RECOUNT_SQL,
  ...ORDER_RANGE_RECOUNT_SQL,
  `SELECT 'rooms' AS scope, COUNT(*) AS n FROM rooms`,
  `SELECT 'messages:room:' || room_id AS scope, COUNT(*) AS n FROM messages GROUP BY room_id`,
];

/** What every counter must equal: `reconcile()` (`npm run counts:check`) compares with these. */
const RECOUNT_SQL: readonly string[] = [...TABLE_RECOUNT_SQL, ...AUDIT_RECOUNT_SQL];
