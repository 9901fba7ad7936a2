import { Global, Module, type DynamicModule, type Type } from '@nestjs/common';
import { PubSub, type PubSubEngine } from 'graphql-subscriptions';
import { APP_CONFIG, type AppConfig } from '../config/config.js';
import { RedisConnections } from '../redis/redis.module.js';
import {
  EventsService,
  PUB_SUB,
  RoomMessagesSource,
  RoomSequenceSource,
} from './events.service.js';
import { PrefixedRedisPubSub } from './prefixed-redis-pubsub.js';

/**
 * The event bus. With REDIS_URL: a RedisPubSub on two dedicated connections, closed with the app by
 * RedisConnections. Unlike the fail-fast command clients these
 * - subscriber: keeps an offline queue and retries forever, so SUBSCRIBE issued before the connection
 *   is up (or during an outage) is sent when it comes up; ioredis re-subscribes after a reconnect;
 *   no ready check (see below);
 * - publisher: no offline queue, no re-send after a reconnect, and a 500 ms command timeout: a publish
 *   while the connection is down fails at once instead of being queued and published many seconds
 *   later (after the gap it left was filled from the database); the message reaches subscribers
 *   through the gap fill
 *   (docs/realtime.md, "Redis connections").
 * Without REDIS_URL: an in-process PubSub (one instance).
 */
export function eventBus(config: AppConfig, redis: RedisConnections): PubSubEngine {
  if (!redis.enabled) {
    return new PubSub();
  }
  const publisher = redis.create('events-pub', {
    enableOfflineQueue: false,
    // a PUBLISH written just before the connection dropped is not sent again after the
    // reconnect either: its message was filled from the database meanwhile
    autoResendUnfulfilledCommands: false,
    commandTimeout: 500,
    maxRetriesPerRequest: 1,
  });
  const subscriber = redis.create('events-sub', {
    enableOfflineQueue: true,
    // SUBSCRIBE may be written while the connection is still in its handshake (ioredis lets
    // commands flagged `loading` through); the INFO of a ready check would then be refused
    // in subscriber mode, failing the connection and rejecting what was queued. A pub/sub
    // connection has nothing to wait for (SUBSCRIBE is served while Redis loads its data).
    enableReadyCheck: false,
    commandTimeout: undefined,
    maxRetriesPerRequest: null,
  });
  return new PrefixedRedisPubSub(config.redisPrefix, publisher, subscriber);
}

@Global()
@Module({
  providers: [
    {
      provide: PUB_SUB,
      inject: [APP_CONFIG, RedisConnections],
      useFactory: eventBus,
    },
    EventsService,
  ],
  exports: [PUB_SUB, EventsService],
})
export class EventsModule {
  /**
   * `roomSequences`: the rooms' last sequence numbers, which seed the event sequencer at boot (the
   * rooms repository; stateless, so an instance of its own here beside MessagesModule's costs nothing);
   * `roomMessages`: a room's stored messages, which fill the gaps of the live stream (the messages
   * repository, likewise).
   */
  static forRoot(
    roomSequences: Type<RoomSequenceSource>,
    roomMessages: Type<RoomMessagesSource>,
  ): DynamicModule {
    return {
      module: EventsModule,
      providers: [
        { provide: RoomSequenceSource, useClass: roomSequences },
        { provide: RoomMessagesSource, useClass: roomMessages },
      ],
    };
  }
}
