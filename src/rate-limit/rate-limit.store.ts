import { Logger, type OnApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import type { Redis } from 'ioredis';
import { firstConnection, type RedisConnections } from '../redis/redis.module.js';

/** One fixed-window counter after a hit. */
export interface HitResult {
  /** The counter after this hit (unchanged when the hit was refused). */
  count: number;
  /** Milliseconds until the window (and the counter) resets. */
  resetMs: number;
  /** False when `count + amount` would have passed the limit: nothing was added. */
  allowed: boolean;
  /** Refused because the gate counter was used up: `count` and `resetMs` are the gate's. */
  gated?: boolean;
}

/** A second counter that must be below `limit` for a hit to be counted at all (read, never added to). */
export interface Gate {
  key: string;
  limit: number;
}

/**
 * Fixed-window counters: `hit(key, amount, limit, windowMs)` adds `amount` unless that would pass
 * `limit` (so refused requests and over-budget queries spend nothing), `amount = 0` only reads.
 * `undefined` means "unknown": the shared store is unavailable and the caller fails open.
 */
export abstract class RateLimitStore {
  abstract hit(
    key: string,
    amount: number,
    limit: number,
    windowMs: number,
    gate?: Gate,
  ): Promise<HitResult | undefined>;
  /** Outages seen so far (each logged once); lets tests observe the fail-open path. */
  outages = 0;
}

/** In-process counters (no REDIS_URL): one Map, swept of expired windows once a window. */
export class MemoryRateLimitStore extends RateLimitStore implements OnApplicationShutdown {
  private readonly windows = new Map<string, { count: number; resetAt: number }>();
  private readonly sweeper = setInterval(() => this.sweep(), 10_000).unref();

  hit(
    key: string,
    amount: number,
    limit: number,
    windowMs: number,
    gate?: Gate,
  ): Promise<HitResult> {
    const now = Date.now();
    if (gate) {
      const g = this.windows.get(gate.key);
      if (g !== undefined && g.resetAt > now && g.count >= gate.limit) {
        return Promise.resolve({
          count: g.count,
          resetMs: g.resetAt - now,
          allowed: false,
          gated: true,
        });
      }
    }
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
 * the first hit (PEXPIRE only when the key has no TTL yet). Returns {count, pttl, allowed, gated}.
 * With a second key (the gate) and its limit in ARGV[4]: nothing is added while the gate is used
 * up, and the gate's count and pttl are returned (one round trip for both checks).
 */
const HIT_SCRIPT = `
if KEYS[2] then
  local gate = tonumber(redis.call('GET', KEYS[2]) or '0')
  if gate >= tonumber(ARGV[4]) then
    return {gate, redis.call('PTTL', KEYS[2]), 0, 1}
  end
end
local amount = tonumber(ARGV[1])
local limit = tonumber(ARGV[2])
local window = tonumber(ARGV[3])
local current = tonumber(redis.call('GET', KEYS[1]) or '0')
if amount == 0 or current + amount > limit then
  local ttl = redis.call('PTTL', KEYS[1])
  if ttl < 0 then ttl = window end
  return {current, ttl, amount == 0 and 1 or 0, 0}
end
local count = redis.call('INCRBY', KEYS[1], amount)
local ttl = redis.call('PTTL', KEYS[1])
if ttl < 0 then
  redis.call('PEXPIRE', KEYS[1], window)
  ttl = window
end
return {count, ttl, 1, 0}
`;

/** Waits this long at boot for the first connection, so the first requests are counted. */
const BOOT_CONNECT_WAIT_MS = 2_000;
/**
 * After a failed command, Redis is not asked again for this long: with Redis hung (connected but not
 * answering) only one request per second pays the 100 ms command timeout, not every counter call.
 */
const RETRY_AFTER_FAILURE_MS = 1_000;

type HitCommand = (...args: (string | number)[]) => Promise<[number, number, number, number]>;

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
    client.defineCommand('atriumRateLimitGatedHit', { numberOfKeys: 2, lua: HIT_SCRIPT });
  }

  async onModuleInit(): Promise<void> {
    if (this.client.status === 'ready') {
      return;
    }
    // a refused first connection ends the wait at once (Redis down must not slow the boot)
    if (!(await firstConnection(this.client, BOOT_CONNECT_WAIT_MS))) {
      this.failOpen('not connected at startup');
    }
  }

  async hit(
    key: string,
    amount: number,
    limit: number,
    windowMs: number,
    gate?: Gate,
  ): Promise<HitResult | undefined> {
    if (this.client.status !== 'ready') {
      this.failOpen(`connection ${this.client.status}`);
      return undefined;
    }
    if (this.down && Date.now() < this.retryAt) {
      return undefined;
    }
    try {
      const commands = this.client as unknown as {
        atriumRateLimitHit: HitCommand;
        atriumRateLimitGatedHit: HitCommand;
      };
      const [count, resetMs, allowed, gated] = gate
        ? await commands.atriumRateLimitGatedHit.call(
            this.client,
            key,
            gate.key,
            amount,
            limit,
            windowMs,
            gate.limit,
          )
        : await commands.atriumRateLimitHit.call(this.client, key, amount, limit, windowMs);
      if (this.down) {
        this.down = false;
        this.logger.log('Redis is back: rate limits are enforced again');
      }
      return {
        count,
        resetMs: resetMs < 0 ? windowMs : resetMs,
        allowed: allowed === 1,
        gated: gated === 1,
      };
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
      this.logger.warn(
        `Redis unavailable (${reason}): rate limits are not enforced until it returns`,
      );
    }
  }
}

/**
 * The store for this configuration: Redis when REDIS_URL is set, in-process otherwise. Auto-pipelining
 * sends the scripts of concurrent requests in one write (measured: most of the Redis round trip's CPU
 * cost goes, bench/limiter-overhead.mjs); the command timeout still bounds a hung Redis (tested).
 */
export function createRateLimitStore(redis: RedisConnections): RateLimitStore {
  return redis.enabled
    ? new RedisRateLimitStore(redis.create('rate-limit', { enableAutoPipelining: true }))
    : new MemoryRateLimitStore();
}
