import { Global, Module, type DynamicModule, type Type } from '@nestjs/common';
import { PubSub } from 'graphql-subscriptions';
import { APP_CONFIG, type AppConfig } from '../config/config.js';
import { RedisConnections } from '../redis/redis.module.js';
import { EventsService, PUB_SUB, RoomSequenceSource } from './events.service.js';
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
  ],
  exports: [PUB_SUB, EventsService],
})
export class EventsModule {
  /**
   * `roomSequences`: the rooms' last sequence numbers, which seed the event sequencer at boot (the
   * rooms repository; stateless, so an instance of its own here beside MessagesModule's costs nothing).
   */
  static forRoot(roomSequences: Type<RoomSequenceSource>): DynamicModule {
    return {
      module: EventsModule,
      providers: [{ provide: RoomSequenceSource, useClass: roomSequences }],
    };
  }
}
