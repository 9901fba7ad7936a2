import { Injectable } from '@nestjs/common';
import type { TxContext } from '../database/database.service.js';
import { toRestMessage } from '../messages/messages.mapper.js';
import { toRestOrder } from '../orders/orders.mapper.js';
import { WebhookOutbox } from '../outbox/webhook-outbox.js';
import { toRestPost } from '../posts/posts.mapper.js';
import { webhookUserObject } from '../users/webhook-objects.js';
import type { Change } from '../changes/change.js';
import type { ChangeSubscriber } from '../changes/change-record.js';

/**
 * Webhook events (docs/webhooks.md): the changes a partner may subscribe to become outbox rows in
 * the change's transaction, carrying the resource as an ADMIN reads it over REST (`{id}` for a
 * deleted user) and the user the event is about.
 */
@Injectable()
export class OutboxSubscriber implements ChangeSubscriber {
  readonly name = 'webhook-outbox';

  constructor(private readonly outbox: WebhookOutbox) {}

  async inTransaction(tx: TxContext, change: Change): Promise<void> {
    switch (change.type) {
      case 'user.created':
        return this.outbox.enqueue(
          tx,
          'user.created',
          webhookUserObject(change.user),
          change.user.id,
        );
      case 'user.updated':
        return this.outbox.enqueue(
          tx,
          'user.updated',
          webhookUserObject(change.after),
          change.after.id,
        );
      case 'user.deleted':
        return this.outbox.enqueue(tx, 'user.deleted', { id: change.user.id }, change.user.id);
      case 'order.created':
        return this.outbox.enqueue(
          tx,
          'order.created',
          toRestOrder(change.order),
          change.order.userId,
        );
      case 'order.status_changed':
        return this.outbox.enqueue(
          tx,
          'order.status_changed',
          toRestOrder(change.after),
          change.after.userId,
        );
      case 'post.created':
        return this.outbox.enqueue(
          tx,
          'post.created',
          toRestPost(change.post),
          change.post.authorId,
        );
      case 'post.updated':
        return this.outbox.enqueue(
          tx,
          'post.updated',
          toRestPost(change.after),
          change.after.authorId,
        );
      case 'post.deleted':
        return this.outbox.enqueue(
          tx,
          'post.deleted',
          toRestPost(change.post),
          change.post.authorId,
        );
      case 'message.sent':
        return this.outbox.enqueue(
          tx,
          'message.created',
          toRestMessage(change.message),
          change.message.authorId,
        );
      default:
        // no webhook event type for the other changes
        return;
    }
  }
}
