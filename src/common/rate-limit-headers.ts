import type { FastifyReply } from 'fastify';
import { DomainError } from './errors.js';

/** One counter as a response reports it (`RateLimit-*`, docs/rate-limits.md). */
export interface CounterState {
  count: number;
  resetMs: number;
}

export type HeaderSink = (name: string, value: string) => void;

export const TOO_MANY_FAILURES = 'Too many failed credential checks';

/** Seconds until `resetMs` has passed, never 0 (a client told "retry in 0 s" retries at once). */
export function secondsUntil(resetMs: number): number {
  return Math.max(1, Math.ceil(resetMs / 1000));
}

/** The `RateLimit-*` headers of one counter. */
export function writeRateLimitHeaders(sink: HeaderSink, limit: number, hit: CounterState): void {
  sink('RateLimit-Limit', String(limit));
  sink('RateLimit-Remaining', String(Math.max(0, limit - hit.count)));
  sink('RateLimit-Reset', String(secondsUntil(hit.resetMs)));
}

export function rateLimitedError(resetMs: number, what = 'Too many requests'): DomainError {
  return new DomainError('rate_limited', `${what}; retry in ${secondsUntil(resetMs)} s`);
}

export function replySink(reply: FastifyReply): HeaderSink {
  return (name, value) => void reply.header(name, value);
}

/** A REST 429: the counter's headers, Retry-After, and the error to throw. */
export function refuseWith(
  reply: FastifyReply,
  limit: number,
  hit: CounterState,
  what?: string,
): DomainError {
  const sink = replySink(reply);
  writeRateLimitHeaders(sink, limit, hit);
  sink('Retry-After', String(secondsUntil(hit.resetMs)));
  return rateLimitedError(hit.resetMs, what);
}
