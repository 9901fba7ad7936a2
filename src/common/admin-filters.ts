import type { ErrorDetail } from './errors.js';

/**
 * Query values of the admin lists (docs/admin.md): instants and whole numbers, checked strictly so a
 * typo is a 400 naming the parameter, never a filter silently ignored.
 */
const INSTANT = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:\d{2})$/;

/** An RFC 3339 date-time as the stored form (UTC, milliseconds), or undefined with a detail. */
export function instantParam(
  query: Record<string, unknown>,
  name: string,
  details: ErrorDetail[],
): string | undefined {
  const raw = query[name];
  if (raw === undefined) {
    return undefined;
  }
  const ms = typeof raw === 'string' && INSTANT.test(raw) ? Date.parse(raw) : NaN;
  if (!Number.isFinite(ms)) {
    details.push({
      field: name,
      message: `${name} must be an RFC 3339 date-time such as 2026-01-31T00:00:00Z`,
    });
    return undefined;
  }
  return new Date(ms).toISOString();
}

/** A whole number from 0 to `max`, or undefined with a detail. */
export function wholeParam(
  query: Record<string, unknown>,
  name: string,
  max: number,
  details: ErrorDetail[],
): number | undefined {
  const raw = query[name];
  if (raw === undefined) {
    return undefined;
  }
  if (typeof raw !== 'string' || !/^\d{1,16}$/.test(raw) || Number(raw) > max) {
    details.push({ field: name, message: `${name} must be an integer from 0 to ${max}` });
    return undefined;
  }
  return Number(raw);
}
