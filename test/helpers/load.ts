import type { TestResponse } from './http.js';
import { scaled } from './time.js';

/** One request of a load run: when it started and ended (ms, performance.now()) and its answer. */
export interface Sample {
  started: number;
  ended: number;
  kind: string;
  status: number;
  res?: TestResponse;
  /** A network error instead of a response (connection refused or reset). */
  error?: string;
}

export interface Load {
  samples: Sample[];
  /** Samples that started at or after `from` (and ended before `to`, when given). */
  between(from: number, to?: number): Sample[];
  /** Resolves once `check` holds over the samples so far (polled as samples arrive). */
  until(check: (samples: Sample[]) => boolean, timeoutMs: number, what: string): Promise<void>;
  stop(): Promise<void>;
}

export type Step = (
  worker: number,
  i: number,
) => { kind: string; send: () => Promise<TestResponse> };

/**
 * `workers` concurrent loops, each sending the next request of `step` as soon as the previous one is
 * answered, until `stop()`. Every answer (or network error) is recorded.
 */
export function startLoad(workers: number, step: Step): Load {
  const samples: Sample[] = [];
  let running = true;
  const loops = Array.from({ length: workers }, async (_, w) => {
    for (let i = 0; running; i++) {
      const { kind, send } = step(w, i);
      const started = performance.now();
      try {
        const res = await send();
        samples.push({ started, ended: performance.now(), kind, status: res.status, res });
      } catch (err) {
        const cause = (err as { cause?: { code?: string } }).cause;
        samples.push({
          started,
          ended: performance.now(),
          kind,
          status: 0,
          error: cause?.code ?? (err as Error).message,
        });
      }
    }
  });
  return {
    samples,
    between: (from, to) =>
      samples.filter((s) => s.started >= from && (to === undefined || s.ended <= to)),
    async until(check, timeoutMs, what) {
      const deadline = Date.now() + scaled(timeoutMs);
      while (!check(samples)) {
        if (Date.now() > deadline) {
          throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
        }
        await new Promise((r) => setTimeout(r, 10));
      }
    },
    async stop() {
      running = false;
      await Promise.all(loops);
    },
  };
}

/** Status counts, e.g. `{"200": 31, "503": 12}` (for assertion messages). */
export function statusCounts(samples: Sample[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const s of samples) {
    const key = s.error ? `${s.status}:${s.error}` : String(s.status);
    counts[key] = (counts[key] ?? 0) + 1;
  }
  return counts;
}

/** The p-th percentile (0-100) of `values` (nearest rank). */
export function percentile(values: number[], p: number): number {
  if (values.length === 0) {
    return NaN;
  }
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
}
