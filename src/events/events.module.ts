import { Global, Module } from '@nestjs/common';
import { PubSub } from 'graphql-subscriptions';
import { EventsService, PUB_SUB } from './events.service.js';

/** In-process PubSub (one instance). Scale-out through Redis arrives with the subscriptions work. */
@Global()
@Module({
  providers: [{ provide: PUB_SUB, useFactory: () => new PubSub() }, EventsService],
  exports: [PUB_SUB, EventsService],
})
export class EventsModule {}
