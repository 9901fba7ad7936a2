import { Injectable } from '@nestjs/common';
import { EventsService } from '../events/events.service.js';
import type { Change } from '../changes/change.js';
import type { ChangeSubscriber } from '../changes/change-record.js';

/**
 * The event bus (GraphQL subscriptions, docs/realtime.md): published after the commit only, so a
 * rolled-back change publishes nothing and a subscriber that reads on an event sees the change.
 */
@Injectable()
export class EventsSubscriber implements ChangeSubscriber {
  readonly name = 'event-bus';

  constructor(private readonly events: EventsService) {}

  async afterCommit(change: Change): Promise<void> {
    switch (change.type) {
      case 'user.updated':
        return this.events.userUpdated(change.after);
      case 'message.sent':
        // the seq lets every instance deliver a room's messages in commit order
        return this.events.messageSent(change.event, change.message.seq);
      default:
        return;
    }
  }
}
