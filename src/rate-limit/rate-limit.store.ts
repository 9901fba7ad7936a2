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
  ): Promise<HitResult | undefined>;
  /**
   * Reads several counters in one step (one Redis round trip): each one's count and the milliseconds
   * until its window ends (`windowMs` when it has none).
   */
  abstract peek(keys: string[], windowMs: number): Promise<WindowState[] | undefined>;
  /** Adds `amount` to several counters in one step, without a limit; answers them after the add. */
  abstract addAll(
    keys: string[],
    amount: number,
    windowMs: number,
  ): Promise<WindowState[] | undefined>;
  /** Outages seen so far (each logged once); lets tests observe the fail-open path. */
  outages = 0;
}

/** A counter's state: its count and the milliseconds until its window ends. */
export interface WindowState {
  count: number;
  resetMs: number;
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

  peek(keys: string[], windowMs: number): Promise<WindowState[]> {
    const now = Date.now();
    return Promise.resolve(
      keys.map((key) => {
        const w = this.windows.get(key);
        return w === undefined || w.resetAt <= now
          ? { count: 0, resetMs: windowMs }
          : { count: w.count, resetMs: w.resetAt - now };
      }),
    );
  }

  addAll(keys: string[], amount: number, windowMs: number): Promise<WindowState[]> {
    const now = Date.now();
    return Promise.resolve(
      keys.map((key) => {
        let w = this.windows.get(key);
        if (w === undefined || w.resetAt <= now) {
          w = { count: 0, resetAt: now + windowMs };
          this.windows.set(key, w);
        }
        w.count += amount;
        return { count: w.count, resetMs: w.resetAt - now };
      }),
    );
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

/** Each KEY's count and PTTL (ARGV[1] = the window when a key has none): {c1, t1, c2, t2, ...}. */
const PEEK_SCRIPT = `
local out = {}
for _, key in ipairs(KEYS) do
  local ttl = redis.call('PTTL', key)
  if ttl < 0 then ttl = tonumber(ARGV[1]) end
  out[#out + 1] = tonumber(redis.call('GET', key) or '0')
  out[#out + 1] = ttl
end
return out
`;

/** INCRBY ARGV[1] on each KEY (PEXPIRE ARGV[2] on a new window): {c1, t1, c2, t2, ...}. */
const ADD_ALL_SCRIPT = `
local out = {}
for _, key in ipairs(KEYS) do
  local count = redis.call('INCRBY', key, ARGV[1])
  local ttl = redis.call('PTTL', key)
  if ttl < 0 then
    redis.call('PEXPIRE', key, ARGV[2])
    ttl = tonumber(ARGV[2])
  end
  out[#out + 1] = count
  out[#out + 1] = ttl
end
return out
`;

/** Waits this long at boot for the first connection, so the first requests are counted. */
const BOOT_CONNECT_WAIT_MS = 2_000;
/**
 * After a failed command, Redis is not asked again for this long: with Redis hung (connected but not
 * answering) only one request per second pays the 100 ms command timeout, not every counter call.
 */
const RETRY_AFTER_FAILURE_MS = 1_000;

type HitCommand = (...args: (string | number)[]) => Promise<[number, number, number]>;

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
    client.defineCommand('atriumRateLimitPeek', { lua: PEEK_SCRIPT });
    client.defineCommand('atriumRateLimitAddAll', { lua: ADD_ALL_SCRIPT });
  }

  peek(keys: string[], windowMs: number): Promise<WindowState[] | undefined> {
    return this.multi('atriumRateLimitPeek', keys, [windowMs]);
  }

  addAll(keys: string[], amount: number, windowMs: number): Promise<WindowState[] | undefined> {
    return this.multi('atriumRateLimitAddAll', keys, [amount, windowMs]);
  }

  /** One multi-key script call (numkeys first), failing open like `hit`. */
  private async multi(
    command: string,
    keys: string[],
    args: number[],
  ): Promise<WindowState[] | undefined> {
    if (this.client.status !== 'ready') {
      this.failOpen(`connection ${this.client.status}`);
      return undefined;
    }
    if (this.down && Date.now() < this.retryAt) {
      return undefined;
    }
    try {
      const run = (this.client as unknown as Record<string, HitCommand>)[command];
      const flat = (await run.call(this.client, keys.length, ...keys, ...args)) as number[];
      this.recovered();
      return keys.map((_, i) => ({ count: flat[2 * i] ?? 0, resetMs: flat[2 * i + 1] ?? 0 }));
    } catch (err) {
      this.failOpen(err instanceof Error ? err.message : String(err));
      return undefined;
    }
  }

  private recovered(): void {
    if (this.down) {
      this.down = false;
      this.logger.log('Redis is back: rate limits are enforced again');
    }
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
  ): Promise<HitResult | undefined> {
    if (this.client.status !== 'ready') {
      this.failOpen(`connection ${this.client.status}`);
      return undefined;
    }
    if (this.down && Date.now() < this.retryAt) {
      return undefined;
    }
    try {
      const commands = this.client as unknown as { atriumRateLimitHit: HitCommand };
      const [count, resetMs, allowed] = await commands.atriumRateLimitHit.call(
        this.client,
        key,
        amount,
        limit,
        windowMs,
      );
      this.recovered();
      return { count, resetMs: resetMs < 0 ? windowMs : resetMs, allowed: allowed === 1 };
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
