/**
 * The run's time factor (vitest.config.ts: 1 + the load average per core when the run started, or
 * TEST_TIME_FACTOR): a test's own deadline or time-out, given for an idle machine, scaled by it.
 */
export function scaled(ms: number): number {
  const factor = Number(process.env.TEST_TIME_FACTOR);
  return Math.round(ms * (factor > 0 ? factor : 1));
}
