import { describe, expect, it } from 'vitest';
import { calendarBeforeKeys, minuteOf } from '../database/calendar-counts.js';
import { createdKey, orderRangeDeltas, statusChangeDeltas } from '../database/order-range-keys.js';
import { MAX_TOTAL_CENTS } from './dto/order.rules.js';
import { totalRangeKeys } from './order-range-totals.js';

/** A repeatable pseudo-random sequence (mulberry32). */
function random(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const STATUSES = ['pending', 'paid', 'cancelled'];

interface Row {
  status: string;
  createdAt: string;
  totalCents: number;
}

/** Orders spread over three years, some in the same minute, totals from 0 to the maximum. */
function orders(next: () => number, n: number): Row[] {
  const start = Date.parse('2025-02-27T22:58:00.000Z');
  const rows: Row[] = [];
  for (let i = 0; i < n; i++) {
    const spread = next() < 0.3 ? 120_000 : 3 * 365 * 86_400_000;
    const totals = [0, 1, 15, 16, 255, 256, 999, MAX_TOTAL_CENTS];
    rows.push({
      status: STATUSES[Math.floor(next() * STATUSES.length)],
      createdAt: new Date(start + Math.floor(next() * spread)).toISOString(),
      totalCents:
        next() < 0.3
          ? totals[Math.floor(next() * totals.length)]
          : Math.floor(next() * (next() < 0.5 ? 5000 : MAX_TOTAL_CENTS)),
    });
  }
  return rows;
}

function counters(rows: Row[]): Map<string, number> {
  const deltas: Record<string, number> = {};
  for (const row of rows) {
    orderRangeDeltas(row, 1, deltas);
  }
  return new Map(Object.entries(deltas));
}

const sum = (counts: Map<string, number>, keys: string[]) =>
  keys.reduce((n, key) => n + (counts.get(key) ?? 0), 0);

describe('order range counters', () => {
  const next = random(20261126);
  const rows = orders(next, 3000);
  const counts = counters(rows);

  it('a total range is the sum of its bucket counters, for every status and for all', () => {
    const edges = [
      0,
      1,
      15,
      16,
      17,
      255,
      256,
      999,
      1000,
      4096,
      MAX_TOTAL_CENTS - 1,
      MAX_TOTAL_CENTS,
    ];
    const picks = [
      ...edges,
      ...Array.from({ length: 60 }, () => Math.floor(next() * MAX_TOTAL_CENTS)),
    ];
    for (let i = 0; i < 300; i++) {
      const a = picks[Math.floor(next() * picks.length)];
      const b = picks[Math.floor(next() * picks.length)];
      const [lo, hi] = a <= b ? [a, b] : [b, a];
      for (const status of [undefined, ...STATUSES]) {
        const keys = totalRangeKeys(status, lo, hi);
        expect(keys.length).toBeLessThanOrEqual(218);
        const expected = rows.filter(
          (r) => (!status || r.status === status) && r.totalCents >= lo && r.totalCents <= hi,
        ).length;
        expect(sum(counts, keys), `${status} [${lo}, ${hi}]`).toBe(expected);
      }
    }
  });

  it('orders created before a minute are the sum of its calendar counters', () => {
    const instants = rows.map((r) => r.createdAt);
    instants.push(
      '2025-01-01T00:00:00.000Z',
      '2025-03-01T00:00:00.000Z',
      '2028-12-31T23:59:59.999Z',
    );
    for (let i = 0; i < 300; i++) {
      const t = instants[Math.floor(next() * instants.length)];
      const minute = minuteOf(t);
      for (const status of [undefined, ...STATUSES]) {
        const keys = calendarBeforeKeys(createdKey(status), minute);
        expect(keys.length).toBeLessThanOrEqual(200);
        const expected = rows.filter(
          (r) => (!status || r.status === status) && Date.parse(r.createdAt) < minute,
        ).length;
        expect(sum(counts, keys), `${status} before ${new Date(minute).toISOString()}`).toBe(
          expected,
        );
      }
    }
  });

  it('a status change moves every counter of the order from one status to the other', () => {
    const order = rows[0];
    const moved = { ...order, status: order.status === 'paid' ? 'pending' : 'paid' };
    const after = new Map(counts);
    for (const [key, delta] of Object.entries(
      statusChangeDeltas(order, order.status, moved.status),
    )) {
      after.set(key, (after.get(key) ?? 0) + delta);
    }
    const changed = counters([...rows.slice(1), moved]);
    for (const key of new Set([...after.keys(), ...changed.keys()])) {
      expect(after.get(key) ?? 0, key).toBe(changed.get(key) ?? 0);
    }
  });

  it('minuteOf is the start of the UTC minute', () => {
    expect(new Date(minuteOf('2026-11-26T03:22:57.123Z')).toISOString()).toBe(
      '2026-11-26T03:22:00.000Z',
    );
    expect(new Date(minuteOf('2026-11-26T03:22:00.000Z')).toISOString()).toBe(
      '2026-11-26T03:22:00.000Z',
    );
  });
});
