import { RedisPubSub } from 'graphql-redis-subscriptions';
import type { Redis } from 'ioredis';

/**
 * RedisPubSub whose channels all start with `prefix` (REDIS_PREFIX), so deployments and test runs can
 * share one Redis. RedisPubSub's own `triggerTransform` applies to subscribe only; publish is
 * prefixed here to match.
 */
export class PrefixedRedisPubSub extends RedisPubSub {
  constructor(
    private readonly prefix: string,
    publisher: Redis,
    subscriber: Redis,
  ) {
    super({ publisher, subscriber, triggerTransform: (trigger) => `${prefix}${String(trigger)}` });
  }

  override publish<T>(trigger: string, payload: T): Promise<void> {
    return super.publish(`${this.prefix}${trigger}`, payload);
  }
}
