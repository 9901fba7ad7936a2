import { scaled } from './time.js';

export interface WaitOptions {
  /** The deadline on an idle machine, scaled by the run's time factor (test/helpers/time.ts). */
  timeoutMs?: number;
  /** How often the condition is asked again. */
  intervalMs?: number;
  /** What is awaited, for the error message (a function: read when the deadline passes). */
  what?: string | (() => string);
}

/**
 * Asks `check` until it returns a value other than `undefined`, `null` or `false` and returns that
 * value; fails once the (scaled) deadline passes. This waits for the condition itself, never for a
 * fixed time: on an idle machine it returns as soon as the condition holds.
 */
export async function waitFor<T>(
  check: () => T | undefined | null | false | Promise<T | undefined | null | false>,
  { timeoutMs = 10_000, intervalMs = 25, what = 'the condition' }: WaitOptions = {},
): Promise<T> {
  const limit = scaled(timeoutMs);
  const deadline = Date.now() + limit;
  for (;;) {
    const value = await check();
    if (value !== undefined && value !== null && value !== false) {
      return value;
    }
    if (Date.now() > deadline) {
      throw new Error(
        `waitFor: ${typeof what === 'function' ? what() : what} did not hold within ${limit} ms`,
      );
    }
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}

/**
 * Resolves once the wall clock is past `at` (ms since the epoch): for an instant the server announced
 * (`Retry-After`, an `expires_at`) or that follows from a window the test configured, counted from a
 * moment the test observed. Computed, never guessed; no load factor applies to it.
 */
export async function pastInstant(at: number): Promise<void> {
  while (Date.now() <= at) {
    await new Promise((resolve) => setTimeout(resolve, at - Date.now() + 1));
  }
}
