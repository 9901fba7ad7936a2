import type { Registry } from 'prom-client';

/**
 * Counters and histograms for the hot paths. prom-client's labelled children re-validate and
 * re-hash their labels on every `inc`/`observe` (a few µs under load); these keep each series'
 * numbers in plain fields, so recording is a Map look-up (once, by the caller) and a few additions,
 * and the labels are only formatted when Prometheus scrapes. They register with a prom-client
 * `Registry` like its own metrics (a name, a type, and `get()`), so the exposition is prom-client's.
 */

interface Value {
  value: number;
  labels: Record<string, string | number>;
  metricName?: string;
}

interface Described {
  name: string;
  help: string;
  labelNames: readonly string[];
}

function labelsOf(names: readonly string[], values: readonly string[]): Record<string, string> {
  const labels: Record<string, string> = {};
  names.forEach((name, i) => (labels[name] = values[i] ?? ''));
  return labels;
}

/** One series of a FastCounter. */
export class CounterSeries {
  value = 0;
  constructor(readonly labels: Record<string, string>) {}

  inc(by = 1): void {
    this.value += by;
  }
}

export class FastCounter {
  readonly type = 'counter';
  readonly name: string;
  readonly help: string;
  private readonly labelNames: readonly string[];
  private readonly series = new Map<string, CounterSeries>();

  constructor(registry: Registry, config: Described) {
    this.name = config.name;
    this.help = config.help;
    this.labelNames = config.labelNames;
    registry.registerMetric(this as never);
  }

  /** The series of these label values (in `labelNames` order), made once: keep it. */
  labels(...values: string[]): CounterSeries {
    const key = values.join('\u0000');
    let series = this.series.get(key);
    if (!series) {
      series = new CounterSeries(labelsOf(this.labelNames, values));
      this.series.set(key, series);
    }
    return series;
  }

  get(): Promise<{ name: string; help: string; type: string; values: Value[] }> {
    const values = [...this.series.values()].map((s) => ({ value: s.value, labels: s.labels }));
    return Promise.resolve({ name: this.name, help: this.help, type: this.type, values });
  }
}

/** One series of a FastHistogram. */
export class HistogramSeries {
  /** Observations per bucket (not cumulative); the last slot is above every bound. */
  readonly counts: Float64Array;
  sum = 0;
  count = 0;

  constructor(
    readonly labels: Record<string, string>,
    private readonly bounds: readonly number[],
  ) {
    this.counts = new Float64Array(bounds.length + 1);
  }

  observe(value: number): void {
    const bounds = this.bounds;
    let i = 0;
    while (i < bounds.length && value > bounds[i]) {
      i += 1;
    }
    this.counts[i] += 1;
    this.sum += value;
    this.count += 1;
  }
}

export class FastHistogram {
  readonly type = 'histogram';
  readonly name: string;
  readonly help: string;
  private readonly labelNames: readonly string[];
  private readonly bounds: readonly number[];
  private readonly series = new Map<string, HistogramSeries>();

  constructor(registry: Registry, config: Described & { buckets: readonly number[] }) {
    this.name = config.name;
    this.help = config.help;
    this.labelNames = config.labelNames;
    this.bounds = [...config.buckets].sort((a, b) => a - b);
    registry.registerMetric(this as never);
  }

  /** The series of these label values (in `labelNames` order), made once: keep it. */
  labels(...values: string[]): HistogramSeries {
    const key = values.join('\u0000');
    let series = this.series.get(key);
    if (!series) {
      series = new HistogramSeries(labelsOf(this.labelNames, values), this.bounds);
      this.series.set(key, series);
    }
    return series;
  }

  get(): Promise<{ name: string; help: string; type: string; values: Value[] }> {
    const values: Value[] = [];
    for (const s of this.series.values()) {
      let cumulative = 0;
      this.bounds.forEach((bound, i) => {
        cumulative += s.counts[i];
        values.push({
          metricName: `${this.name}_bucket`,
          labels: { ...s.labels, le: bound },
          value: cumulative,
        });
      });
      values.push({
        metricName: `${this.name}_bucket`,
        labels: { ...s.labels, le: '+Inf' },
        value: s.count,
      });
      values.push({ metricName: `${this.name}_sum`, labels: s.labels, value: s.sum });
      values.push({ metricName: `${this.name}_count`, labels: s.labels, value: s.count });
    }
    return Promise.resolve({ name: this.name, help: this.help, type: this.type, values });
  }
}
