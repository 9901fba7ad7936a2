import { Global, Module } from '@nestjs/common';
import { ChangeRecord } from '../changes/change-record.js';
import { AuditSubscriber } from './audit.subscriber.js';
import { CountersSubscriber } from './counters.subscriber.js';
import { EventsSubscriber } from './events.subscriber.js';
import { OutboxSubscriber } from './outbox.subscriber.js';

/**
 * The change record and its subscribers (docs/data-integrity.md, "The change record"): global, so
 * every write service can record its changes. The subscribers are registered here, in a fixed order.
 * This wiring sits above the resource folders (the outbox subscriber maps resources with their
 * mappers), while ChangeRecord and the Change union (src/changes/) sit below them: the folder graph
 * stays acyclic.
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
