import { Injectable } from '@nestjs/common';
import type { TxContext } from '../database/database.service.js';
import { WebhookEventsRepository } from './webhook-events.repository.js';
import { newId } from '../common/ids.js';
import type { WebhookEventType } from './webhook-types.js';
import { activeTraceparent } from '../telemetry/tracing.js';

/**
 * Where a change's webhook event is written: in the change's own transaction, so an event exists
 * exactly when the change committed (a crash after the commit loses nothing; a rollback sends
 * nothing). Only the change record's outbox subscriber enqueues (src/change-subscribers/, docs/data-integrity.md
 * "The change record"); the delivery engine fans the rows out to the endpoints after the commit.
 */
@Injectable()
export class WebhookOutbox {
  private readonly listeners: (() => void)[] = [];

  constructor(private readonly events: WebhookEventsRepository) {}

  /**
   * `object` is the resource's REST representation as an ADMIN reads it (`{id}` for a deletion);
   * `userId` the user the event is about (the user, the author, the owner, the sender).
   */
  async enqueue(
    tx: TxContext,
    type: WebhookEventType,
    object: object,
    userId: string | null,
  ): Promise<void> {
    await this.events.insert(tx.manager, {
      id: newId('webhookEvent'),
      type,
      user_id: userId,
      payload: JSON.stringify(object),
      created_at: new Date().toISOString(),
      dispatched_at: null,
      // the deliveries, however late, continue the trace of the request that made the change
      traceparent: activeTraceparent(),
    });
    tx.afterCommit(() => this.notify());
  }

  /** The engine asks to be woken when new events committed on this instance. */
  onEnqueued(listener: () => void): void {
    this.listeners.push(listener);
  }

  private notify(): void {
    for (const listener of this.listeners) {
      listener();
    }
  }
}
