import { Global, Module } from '@nestjs/common';
import { ChangeRecord } from './change-record.js';
import { AuditSubscriber } from './subscribers/audit.subscriber.js';
import { CountersSubscriber } from './subscribers/counters.subscriber.js';
import { EventsSubscriber } from './subscribers/events.subscriber.js';
import { OutboxSubscriber } from './subscribers/outbox.subscriber.js';

/**
 * The change record and its subscribers (docs/data-integrity.md, "The change record"): global, so
 * every write service can record its changes. The subscribers are registered here, in a fixed order.
 */
@Global()
@Module({
  providers: [
    CountersSubscriber,
    OutboxSubscriber,
    AuditSubscriber,
    EventsSubscriber,
    {
      provide: ChangeRecord,
      inject: [CountersSubscriber, OutboxSubscriber, AuditSubscriber, EventsSubscriber],
      useFactory: (
        counters: CountersSubscriber,
        outbox: OutboxSubscriber,
        audit: AuditSubscriber,
        events: EventsSubscriber,
      ) => {
        const record = new ChangeRecord();
        for (const subscriber of [counters, outbox, audit, events]) {
          record.subscribe(subscriber);
        }
        return record;
      },
    },
  ],
  exports: [ChangeRecord],
})
export class ChangesModule {}
