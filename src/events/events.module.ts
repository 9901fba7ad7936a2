import { Global, Module } from '@nestjs/common';
import { PubSub } from 'graphql-subscriptions';
import { APP_CONFIG, type AppConfig } from '../config/config.js';
import { RoomsRepository } from '../messages/rooms.repository.js';
import { RedisConnections } from '../redis/redis.module.js';
import { EventsService, PUB_SUB } from './events.service.js';
import { PrefixedRedisPubSub } from './prefixed-redis-pubsub.js';

/**
 * The event bus. With REDIS_URL: a RedisPubSub on two dedicated connections, closed with the app by
 * RedisConnections. Unlike the fail-fast command clients these
 * - subscriber: keeps an offline queue and retries forever, so SUBSCRIBE issued before the connection
 *   is up (or during an outage) is sent when it comes up; ioredis re-subscribes after a reconnect;
 * - publisher: keeps a short offline queue (boot, a blip) but gives up after 500 ms, so a request
 *   never waits long for a bus that is down: the event is dropped and logged (at most once).
 * Without REDIS_URL: an in-process PubSub (one instance).
 */
@Global()
@Module({
  providers: [
    {
      provide: PUB_SUB,
      inject: [APP_CONFIG, RedisConnections],
      useFactory: (config: AppConfig, redis: RedisConnections) => {
        if (!redis.enabled) {
          return new PubSub();
        }
        const publisher = redis.create('events-pub', {
          enableOfflineQueue: true,
          commandTimeout: 500,
          maxRetriesPerRequest: 1,
        });
        const subscriber = redis.create('events-sub', {
          enableOfflineQueue: true,
          commandTimeout: undefined,
          maxRetriesPerRequest: null,
        });
        return new PrefixedRedisPubSub(config.redisPrefix, publisher, subscriber);
      },
    },
    EventsService,
    // the rooms' last sequence numbers seed the event sequencer at boot (stateless: a second instance
    // beside MessagesModule's costs nothing)
    RoomsRepository,
  ],
  exports: [PUB_SUB, EventsService],
})
export class EventsModule {}
