import { addCalendar, CALENDAR_PREFIXES, type CalendarKey } from './calendar-counts.js';

/**
 * Counter keys behind the exact totals of the orders list's range filters (docs/admin.md "Totals").
 *
 * Every order of a live user adds 1 to a small tree of counters in `list_counts`, once for all orders
 * and once for its status:
 * - by creation time, one counter per calendar unit of its `created_at` text (calendar-counts.ts): the
 *   year, month, day, hour and minute it falls in (`orders:created:2026-11`,
 *   `orders:status:paid:created:2026-11-26T03:22`);
 * - by total, one counter per power-of-16 bucket of `total_cents` (`orders:total:<shift>:<total >> shift>`,
 *   shifts 0, 4, …, 28), down to the single value.
 * A date or total range is then a sum of at most a few hundred counters whatever the number of
 * orders (src/orders/order-range-totals.ts), and each order write adds 26 deltas to the same
 * transaction as the list counters (CountersRepository).
 */

/** `total_cents >> shift` buckets, 16 per level; the top level (28) covers totals up to 2^32 - 1. */
export const TOTAL_SHIFTS = [0, 4, 8, 12, 16, 20, 24, 28] as const;

const scope = (status: string | undefined) => (status ? `orders:status:${status}` : 'orders');

/** Orders (of `status`, or all) created within a calendar unit (an ISO-text prefix). */
export function createdKey(status: string | undefined): CalendarKey {
  const base = `${scope(status)}:created:`;
  return (prefix) => base + prefix;
}

/** Orders (of `status`, or all) whose `total_cents >> shift` is `bucket`. */
export function totalKey(status: string | undefined, shift: number, bucket: number): string {
  return `${scope(status)}:total:${shift}:${bucket}`;
}

/** The counters one order adds to (or, with a negative delta, leaves), by status and for all. */
export function orderRangeDeltas(
  order: { status: string; createdAt: string; totalCents: number },
  delta: number,
  into: Record<string, number> = {},
): Record<string, number> {
  for (const status of [undefined, order.status]) {
    addCreated(into, status, order.createdAt, delta);
    addTotal(into, status, order.totalCents, delta);
  }
  return into;
}

/** A status change moves the order's counters from one status to the other. */
export function statusChangeDeltas(
  order: { createdAt: string; totalCents: number },
  from: string,
  to: string,
): Record<string, number> {
  const into: Record<string, number> = {};
  addCreated(into, from, order.createdAt, -1);
  addTotal(into, from, order.totalCents, -1);
  addCreated(into, to, order.createdAt, 1);
  addTotal(into, to, order.totalCents, 1);
  return into;
}

/** `n` orders created at `createdAt` (ISO text): its year, month, day, hour and minute counters. */
export function addCreated(
  into: Record<string, number>,
  status: string | undefined,
  createdAt: string,
  n: number,
): void {
  addCalendar(into, createdKey(status), createdAt, n);
}

/** `n` orders of total `totalCents`: its bucket at every level. */
export function addTotal(
  into: Record<string, number>,
  status: string | undefined,
  totalCents: number,
  n: number,
): void {
  for (const shift of TOTAL_SHIFTS) {
    // totals stay below 2^31 (dto limits): a division, not `>>`, keeps them unsigned anyway
    const key = totalKey(status, shift, Math.floor(totalCents / 2 ** shift));
    into[key] = (into[key] ?? 0) + n;
  }
}

const LIVE_ORDERS = 'FROM orders o JOIN users u ON u.id = o.user_id WHERE u.deleted_at IS NULL';

/**
 * What each range counter must equal: `scope, n` rows in dialect-neutral SQL (`substr`, `>>` and `||`
 * mean the same on SQLite and PostgreSQL). Backfilled by migration 1764500000000 and compared by
 * `npm run counts:check`.
 */
export const ORDER_RANGE_RECOUNT_SQL: readonly string[] = [
  ...CALENDAR_PREFIXES.flatMap((length) => [
    `SELECT 'orders:created:' || substr(o.created_at, 1, ${length}) AS scope, COUNT(*) AS n ${LIVE_ORDERS}
      GROUP BY substr(o.created_at, 1, ${length})`,
    `SELECT 'orders:status:' || o.status || ':created:' || substr(o.created_at, 1, ${length}) AS scope,
            COUNT(*) AS n ${LIVE_ORDERS} GROUP BY o.status, substr(o.created_at, 1, ${length})`,
  ]),
  ...TOTAL_SHIFTS.flatMap((shift) => [
    `SELECT 'orders:total:${shift}:' || (o.total_cents >> ${shift}) AS scope, COUNT(*) AS n ${LIVE_ORDERS}
      GROUP BY o.total_cents >> ${shift}`,
    `SELECT 'orders:status:' || o.status || ':total:${shift}:' || (o.total_cents >> ${shift}) AS scope,
            COUNT(*) AS n ${LIVE_ORDERS} GROUP BY o.status, o.total_cents >> ${shift}`,
  ]),
];
