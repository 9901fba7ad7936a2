import { Logger, type OnApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import type { Redis } from 'ioredis';
import type { RedisConnections } from '../redis/redis.module.js';

/** One fixed-window counter after a hit. */
export interface HitResult {
  /** The counter after this hit (unchanged when the hit was refused). */
  count: number;
  /** Milliseconds until the window (and the counter) resets. */
  resetMs: number;
  /** False when `count + amount` would have passed the limit: nothing was added. */
  allowed: boolean;
}

/**
 * Fixed-window counters: `hit(key, amount, limit, windowMs)` adds `amount` unless that would pass
 * `limit` (so refused requests and over-budget queries spend nothing), `amount = 0` only reads.
 * `undefined` means "unknown": the shared store is unavailable and the caller fails open.
 */
export abstract class RateLimitStore {
  abstract hit(key: string, amount: number, limit: number, windowMs: number): Promise<HitResult | undefined>;
  /** Outages seen so far (each logged once); lets tests observe the fail-open path. */
  outages = 0;
}

/** In-process counters (no REDIS_URL): one Map, swept of expired windows once a window. */
export class MemoryRateLimitStore extends RateLimitStore implements OnApplicationShutdown {
  private readonly windows = new Map<string, { count: number; resetAt: number }>();
  private readonly sweeper = setInterval(() => this.sweep(), 10_000).unref();

  hit(key: string, amount: number, limit: number, windowMs: number): Promise<HitResult> {
    const now = Date.now();
    let w = this.windows.get(key);
    if (w === undefined || w.resetAt <= now) {
      if (amount === 0) {
        return Promise.resolve({ count: 0, resetMs: windowMs, allowed: true });
      }
      w = { count: 0, resetAt: now + windowMs };
      this.windows.set(key, w);
    }
    const allowed = w.count + amount <= limit;
    if (allowed) {
      w.count += amount;
    }
    return Promise.resolve({ count: w.count, resetMs: w.resetAt - now, allowed });
  }

  private sweep(): void {
    const now = Date.now();
    for (const [key, w] of this.windows) {
      if (w.resetAt <= now) {
        this.windows.delete(key);
      }
    }
  }

  onApplicationShutdown(): void {
    clearInterval(this.sweeper);
  }
}

/**
 * Read, compare and add in one atomic step (two instances see one counter); the window starts at
 * the first hit (PEXPIRE only when the key has no TTL yet). Returns {count, pttl, allowed}.
 */
const HIT_SCRIPT = `
local amount = tonumber(ARGV[1])
local limit = tonumber(ARGV[2])
local window = tonumber(ARGV[3])
local current = tonumber(redis.call('GET', KEYS[1]) or '0')
if amount == 0 or current + amount > limit then
  local ttl = redis.call('PTTL', KEYS[1])
  if ttl < 0 then ttl = window end
  return {current, ttl, amount == 0 and 1 or 0}
end
local count = redis.call('INCRBY', KEYS[1], amount)
local ttl = redis.call('PTTL', KEYS[1])
if ttl < 0 then
  redis.call('PEXPIRE', KEYS[1], window)
  ttl = window
end
return {count, ttl, 1}
`;

/** Waits this long at boot for the first connection, so the first requests are counted. */
const BOOT_CONNECT_WAIT_MS = 2_000;
/**
 * After a failed command, Redis is not asked again for this long: with Redis hung (connected but not
 * answering) only one request per second pays the 100 ms command timeout, not every counter call.
 */
const RETRY_AFTER_FAILURE_MS = 1_000;

type HitCommand = (key: string, amount: number, limit: number, windowMs: number) => Promise<[number, number, number]>;

/**
 * Counters in Redis (REDIS_URL set). Fails open: while Redis is unreachable `hit` answers
 * `undefined` at once (the client has no offline queue) or after at most the client's 100 ms
 * command timeout (Redis hung; then at once for the next second), logs one warning per outage, and
 * counts again as soon as the client has reconnected by itself.
 */
export class RedisRateLimitStore extends RateLimitStore implements OnModuleInit {
  private readonly logger = new Logger('RateLimit');
  private down = false;
  private retryAt = 0;

  constructor(private readonly client: Redis) {
    super();
    client.defineCommand('atriumRateLimitHit', { numberOfKeys: 1, lua: HIT_SCRIPT });
  }

  async onModuleInit(): Promise<void> {
    if (this.client.status === 'ready') {
      return;
    }
    // not events.once(): it rejects on the first 'error' (ECONNREFUSED while Redis is down) and boot
    // would fail instead of failing open
    const ready = new Promise<boolean>((resolve) => this.client.once('ready', () => resolve(true)));
    const timeout = new Promise<boolean>((resolve) => setTimeout(() => resolve(false), BOOT_CONNECT_WAIT_MS).unref());
    if (!(await Promise.race([ready, timeout]))) {
      this.failOpen('not connected at startup');
    }
  }

  async hit(key: string, amount: number, limit: number, windowMs: number): Promise<HitResult | undefined> {
    if (this.client.status !== 'ready') {
      this.failOpen(`connection ${this.client.status}`);
      return undefined;
    }
    if (this.down && Date.now() < this.retryAt) {
      return undefined;
    }
    try {
      const command = (this.client as unknown as { atriumRateLimitHit: HitCommand }).atriumRateLimitHit;
      const [count, resetMs, allowed] = await command.call(this.client, key, amount, limit, windowMs);
      if (this.down) {
        this.down = false;
        this.logger.log('Redis is back: rate limits are enforced again');
      }
      return { count, resetMs, allowed: allowed === 1 };
    } catch (err) {
      this.failOpen(err instanceof Error ? err.message : String(err));
      return undefined;
    }
  }

  private failOpen(reason: string): void {
    this.retryAt = Date.now() + RETRY_AFTER_FAILURE_MS;
    if (!this.down) {
      this.down = true;
      this.outages += 1;
      this.logger.warn(`Redis unavailable (${reason}): rate limits are not enforced until it returns`);
    }
  }
}

/** The store for this configuration: Redis when REDIS_URL is set, in-process otherwise. */
export function createRateLimitStore(redis: RedisConnections): RateLimitStore {
  return redis.enabled ? new RedisRateLimitStore(redis.create('rate-limit')) : new MemoryRateLimitStore();
}
