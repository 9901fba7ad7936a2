import type { Redis } from 'ioredis';
import { RedisPubSub } from 'graphql-redis-subscriptions';
import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../config/config.js';
import { RedisConnections } from '../redis/redis.module.js';
import { eventBus } from './events.module.js';

const redisUrl = process.env.REDIS_URL;

describe.skipIf(!redisUrl)('the event bus on Redis (needs REDIS_URL)', () => {
  let connections: RedisConnections | undefined;
  afterEach(async () => {
    await connections?.onApplicationShutdown();
  });

  // ioredis writes SUBSCRIBE during the connection's handshake (the command is flagged `loading`);
  // with a ready check its INFO was then refused in subscriber mode and the connection failed,
  // rejecting what it had queued (seen once in CI as an unhandled rejection at boot).
  it('a SUBSCRIBE written during the handshake neither fails the connection nor is lost', async () => {
    const config = loadConfig({ ...process.env, REDIS_URL: redisUrl });
    connections = new RedisConnections(config);
    const bus = eventBus(config, connections);
    expect(bus).toBeInstanceOf(RedisPubSub);
    const subscriber = (bus as RedisPubSub).getSubscriber() as unknown as Redis;
    const errors: string[] = [];
    subscriber.on('error', (err: Error) => errors.push(err.message));
    const received = new Promise<unknown>((resolve) => {
      subscriber.once('connect', () => {
        void bus.subscribe('handshake-race', resolve, {});
      });
    });
    const publisher = (bus as RedisPubSub).getPublisher() as unknown as Redis;
    await Promise.all(
      [subscriber, publisher].map((c) => new Promise((resolve) => c.once('ready', resolve))),
    );
    await bus.publish('handshake-race', { ok: true });
    await expect(received).resolves.toEqual({ ok: true });
    expect(errors).toEqual([]);
  });
});
