/**
 * Keeps a client-chosen label value (a GraphQL operation name) from multiplying time series: the
 * first `max` distinct values seen by this process keep their own label, every later one is
 * `other`. A value longer than `maxLength` characters, or outside the GraphQL name charset, is
 * `other` too. First come, first kept (no eviction): a series, once exported, keeps its name for
 * the life of the process, so Prometheus never sees a name's counter reset because it was evicted.
 */
export class BoundedLabel {
  private readonly seen = new Set<string>();

  constructor(
    readonly max: number,
    readonly maxLength: number,
  ) {}

  /** Values kept so far. */
  get size(): number {
    return this.seen.size;
  }

  label(value: string): string {
    if (this.seen.has(value)) {
      return value;
    }
    if (
      this.seen.size >= this.max ||
      value.length > this.maxLength ||
      !/^[_A-Za-z][_0-9A-Za-z]*$/.test(value)
    ) {
      return 'other';
    }
    this.seen.add(value);
    return value;
  }
}
