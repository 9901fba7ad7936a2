/**
 * Counters of rows by the calendar units of a timestamp column (ISO text, whole milliseconds): a row
 * counts once in the year, month, day, hour and minute it falls in (`<scope>:2026`, …,
 * `<scope>:2026-11-26T03:22`), so the number of rows in any interval is a sum of at most ~190
 * counters plus a COUNT of the rows in a bound's own minute (docs/admin.md "Totals"). Used for the
 * orders' `created_at` and the audit log's `at`.
 */

/** Lengths of the ISO-text prefixes counted: year, month, day, hour, minute. */
export const CALENDAR_PREFIXES = [4, 7, 10, 13, 16] as const;

/** The key of the counter of one calendar unit (an ISO-text prefix) under a scope. */
export type CalendarKey = (prefix: string) => string;

/** Adds `n` rows at `iso` to `into`: one delta per calendar unit. */
export function addCalendar(
  into: Record<string, number>,
  key: CalendarKey,
  iso: string,
  n: number,
): void {
  for (const length of CALENDAR_PREFIXES) {
    const k = key(iso.slice(0, length));
    into[k] = (into[k] ?? 0) + n;
  }
}

/** No row is stamped before this year (the columns hold the server's clock at insert). */
const FIRST_YEAR = 1970;

const pad = (n: number, width = 2) => String(n).padStart(width, '0');

/**
 * The counters whose sum is the number of rows before the UTC minute that starts at `minute` (ms):
 * every whole year since 1970, then the months, days, hours and minutes before it in its year,
 * month, day and hour (at most ~190 keys).
 */
export function calendarBeforeKeys(key: CalendarKey, minute: number): string[] {
  const at = new Date(minute);
  const y = pad(at.getUTCFullYear(), 4);
  const mo = pad(at.getUTCMonth() + 1);
  const d = pad(at.getUTCDate());
  const h = pad(at.getUTCHours());
  const keys: string[] = [];
  for (let year = FIRST_YEAR; year < at.getUTCFullYear(); year++) {
    keys.push(key(pad(year, 4)));
  }
  for (let month = 1; month < at.getUTCMonth() + 1; month++) {
    keys.push(key(`${y}-${pad(month)}`));
  }
  for (let day = 1; day < at.getUTCDate(); day++) {
    keys.push(key(`${y}-${mo}-${pad(day)}`));
  }
  for (let hour = 0; hour < at.getUTCHours(); hour++) {
    keys.push(key(`${y}-${mo}-${d}T${pad(hour)}`));
  }
  for (let m = 0; m < at.getUTCMinutes(); m++) {
    keys.push(key(`${y}-${mo}-${d}T${h}:${pad(m)}`));
  }
  return keys;
}

/** The start of the UTC minute holding the instant `iso` (ms). */
export function minuteOf(iso: string): number {
  const ms = Date.parse(iso);
  return ms - (((ms % 60_000) + 60_000) % 60_000);
}

/** How `countInInterval` reads counters and counts rows. */
export interface IntervalSources {
  /** The counter of all the rows of the scope. */
  all: string;
  key: CalendarKey;
  /** Counters by key, in one read (missing keys are 0). */
  counters(keys: string[]): Promise<Map<string, number>>;
  /** The rows stamped after `after` and at or before `upTo` (a COUNT over one minute's range). */
  count(after: string, upTo: string): Promise<number>;
}

/**
 * The rows stamped in (after, before] (either bound may be absent): (at or before `before`) − (at
 * or before `after`), where "at or before t" is the counters of every whole minute before t's
 * minute plus a COUNT of t's own minute up to t.
 */
export async function countInInterval(
  sources: IntervalSources,
  after: string | undefined,
  before: string | undefined,
): Promise<number> {
  const bounds = [before, after].filter((t): t is string => t !== undefined);
  const keysOf = bounds.map((t) => calendarBeforeKeys(sources.key, minuteOf(t)));
  const [counts, ...edges] = await Promise.all([
    sources.counters([sources.all, ...keysOf.flat()]),
    // after (minute - 1 ms) is at or after the minute: the text has whole milliseconds
    ...bounds.map((t) => sources.count(new Date(minuteOf(t) - 1).toISOString(), t)),
  ]);
  const upTo = bounds.map(
    (_, i) => keysOf[i].reduce((n, key) => n + (counts.get(key) ?? 0), 0) + edges[i],
  );
  const upToBefore = before !== undefined ? upTo[0] : (counts.get(sources.all) ?? 0);
  const upToAfter = after !== undefined ? upTo[upTo.length - 1] : 0;
  return Math.max(0, upToBefore - upToAfter);
}
