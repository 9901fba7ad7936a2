import { Global, Module } from '@nestjs/common';
import { WebhookEventsRepository } from './webhook-events.repository.js';
import { WebhookOutbox } from './webhook-outbox.js';

/** The outbox alone (the resource services write to it); the rest of webhooks is WebhooksModule. */
@Global()
@Module({
  providers: [WebhookEventsRepository, WebhookOutbox],
  exports: [WebhookEventsRepository, WebhookOutbox],
})
export class WebhookOutboxModule {}
