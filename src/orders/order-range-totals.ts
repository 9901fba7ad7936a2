import { createdKey, totalKey, TOTAL_SHIFTS } from '../database/order-range-keys.js';

/**
 * The counters whose sum is the number of orders with `lo <= total_cents <= hi` (of `status`, or all):
 * the range split into whole power-of-16 buckets, largest first (at most 15 per side and level,
 * 218 in all), over the counter tree of order-range-keys.ts.
 */
export function totalRangeKeys(status: string | undefined, lo: number, hi: number): string[] {
  const keys: string[] = [];
  let level = 0;
  while (lo <= hi) {
    const shift = TOTAL_SHIFTS[level];
    if (level === TOTAL_SHIFTS.length - 1) {
      for (let b = lo; b <= hi; b++) {
        keys.push(totalKey(status, shift, b));
      }
      break;
    }
    while (lo <= hi && lo % 16 !== 0) {
      keys.push(totalKey(status, shift, lo++));
    }
    while (lo <= hi && (hi + 1) % 16 !== 0) {
      keys.push(totalKey(status, shift, hi--));
    }
    if (lo > hi) {
      break;
    }
    lo /= 16;
    hi = (hi + 1) / 16 - 1;
    level++;
  }
  return keys;
}

/** No order is created before this year (`created_at` is the server's clock at insert). */
const FIRST_YEAR = 1970;

const pad = (n: number, width = 2) => String(n).padStart(width, '0');

/**
 * The counters whose sum is the number of orders created before the minute that starts at `minute`
 * (ms, a whole UTC minute), of `status` or all: every whole year since 1970, then the months, days,
 * hours and minutes before it in its year, month, day and hour (at most ~190 keys).
 */
export function createdBeforeKeys(status: string | undefined, minute: number): string[] {
  const at = new Date(minute);
  const y = pad(at.getUTCFullYear(), 4);
  const mo = pad(at.getUTCMonth() + 1);
  const d = pad(at.getUTCDate());
  const h = pad(at.getUTCHours());
  const keys: string[] = [];
  for (let year = FIRST_YEAR; year < at.getUTCFullYear(); year++) {
    keys.push(createdKey(status, pad(year, 4)));
  }
  for (let month = 1; month < at.getUTCMonth() + 1; month++) {
    keys.push(createdKey(status, `${y}-${pad(month)}`));
  }
  for (let day = 1; day < at.getUTCDate(); day++) {
    keys.push(createdKey(status, `${y}-${mo}-${pad(day)}`));
  }
  for (let hour = 0; hour < at.getUTCHours(); hour++) {
    keys.push(createdKey(status, `${y}-${mo}-${d}T${pad(hour)}`));
  }
  for (let m = 0; m < at.getUTCMinutes(); m++) {
    keys.push(createdKey(status, `${y}-${mo}-${d}T${h}:${pad(m)}`));
  }
  return keys;
}

/** The start of the UTC minute holding the instant `iso` (ms). */
export function minuteOf(iso: string): number {
  const ms = Date.parse(iso);
  return ms - (((ms % 60_000) + 60_000) % 60_000);
}
