import { Inject, Injectable } from '@nestjs/common';
import type { PubSubEngine } from 'graphql-subscriptions';
import type { User } from '../users/user.js';

export const PUB_SUB = Symbol('PUB_SUB');

export const TOPICS = {
  userUpdated: 'userUpdated',
} as const;

/**
 * Domain events, published by services after their transaction commits (never from inside it), so
 * a rolled-back change publishes nothing. Subscribers (GraphQL subscriptions) read the same PubSub.
 */
@Injectable()
export class EventsService {
  constructor(@Inject(PUB_SUB) readonly pubSub: PubSubEngine) {}

  userUpdated(user: User): Promise<void> {
    return this.pubSub.publish(TOPICS.userUpdated, { userUpdated: user });
  }
}
