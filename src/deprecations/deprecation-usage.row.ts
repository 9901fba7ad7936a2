/** One (element, client, day) counter to add, as a flush writes it. */
export interface UsageIncrement {
  element: string;
  client: string;
  /** UTC day, `YYYY-MM-DD`. */
  day: string;
  n: number;
  lastUsedAt: string;
}

/** One client's use of one element over the days asked for, as the reports read it. */
export interface UsageTotal {
  element: string;
  client: string;
  count: number;
  lastUsedAt: string;
}

export interface UsageTotalRow {
  element: string;
  client: string;
  n: number | string;
  last_used_at: string;
}

export function fromRow(r: UsageTotalRow): UsageTotal {
  return { element: r.element, client: r.client, count: Number(r.n), lastUsedAt: r.last_used_at };
}
