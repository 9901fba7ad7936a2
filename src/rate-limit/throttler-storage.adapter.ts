import type { ThrottlerStorage } from '@nestjs/throttler';
import { secondsUntil } from './rate-limit.service.js';
import type { RateLimitStore } from './rate-limit.store.js';

type ThrottlerStorageRecord = Awaited<ReturnType<ThrottlerStorage['increment']>>;

/** What `increment` answers while the store is unavailable: let the request through. */
const FAIL_OPEN: ThrottlerStorageRecord = Object.freeze({
  totalHits: 0,
  timeToExpire: 0,
  isBlocked: false,
  timeToBlockExpire: 0,
});

export function isFailOpen(record: ThrottlerStorageRecord): boolean {
  return record === FAIL_OPEN;
}

/**
 * @nestjs/throttler's storage interface over our counters (Redis or in-process). Fixed windows; a
 * refused request is not added, so a client that keeps retrying gets in again when the window ends
 * (the stock storage's `blockDuration` is not used: Retry-After is the window's end).
 */
export class RateLimitThrottlerStorage implements ThrottlerStorage {
  constructor(private readonly store: RateLimitStore) {}

  async increment(key: string, ttl: number, limit: number): Promise<ThrottlerStorageRecord> {
    const hit = await this.store.hit(key, 1, limit, ttl);
    if (hit === undefined) {
      return FAIL_OPEN;
    }
    const seconds = secondsUntil(hit.resetMs);
    return {
      totalHits: hit.allowed ? hit.count : hit.count + 1,
      timeToExpire: seconds,
      isBlocked: !hit.allowed,
      timeToBlockExpire: hit.allowed ? 0 : seconds,
    };
  }
}
