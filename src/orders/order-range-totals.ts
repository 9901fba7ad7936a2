import { totalKey, TOTAL_SHIFTS } from '../database/order-range-keys.js';

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
