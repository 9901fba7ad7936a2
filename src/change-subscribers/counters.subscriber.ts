import { Injectable } from '@nestjs/common';
import { CountersRepository, CountKeys } from '../database/counters.repository.js';
import type { TxContext } from '../database/database.service.js';
import { orderRangeDeltas, statusChangeDeltas } from '../database/order-range-keys.js';
import type { Change } from '../changes/change.js';
import type { ChangeSubscriber } from '../changes/change-record.js';

/**
 * The list counters (`list_counts`): every change that moves a row into or out of a counted list,
 * or between its filters (a role, a status), adds its deltas in the transaction. CountersRepository
 * merges a transaction's deltas and writes them just before it commits.
 */
@Injectable()
export class CountersSubscriber implements ChangeSubscriber {
  readonly name = 'counters';

  constructor(private readonly counters: CountersRepository) {}

  async inTransaction(tx: TxContext, change: Change): Promise<void> {
    switch (change.type) {
      case 'user.created':
        this.counters.add(tx, {
          [CountKeys.users()]: 1,
          [CountKeys.usersByRole(change.user.role)]: 1,
        });
        return;
      case 'user.updated':
        if (change.before.role !== change.after.role) {
          this.counters.add(tx, {
            [CountKeys.usersByRole(change.before.role)]: -1,
            [CountKeys.usersByRole(change.after.role)]: 1,
          });
        }
        return;
      case 'user.deleted':
        this.counters.add(tx, {
          [CountKeys.users()]: -1,
          [CountKeys.usersByRole(change.user.role)]: -1,
        });
        // the user's orders leave the list across users with it
        await this.counters.forgetOrdersOfUser(tx, change.user.id);
        return;
      case 'order.created': {
        const { order } = change;
        this.counters.add(tx, {
          [CountKeys.ordersOfUser(order.userId)]: 1,
          [CountKeys.ordersOfUserByStatus(order.userId, order.status)]: 1,
          [CountKeys.orders()]: 1,
          [CountKeys.ordersByStatus(order.status)]: 1,
        });
        this.counters.add(tx, orderRangeDeltas(order, 1));
        return;
      }
      case 'order.status_changed': {
        const { before, after } = change;
        this.counters.add(tx, {
          [CountKeys.ordersOfUserByStatus(before.userId, before.status)]: -1,
          [CountKeys.ordersOfUserByStatus(before.userId, after.status)]: 1,
          [CountKeys.ordersByStatus(before.status)]: -1,
          [CountKeys.ordersByStatus(after.status)]: 1,
        });
        this.counters.add(tx, statusChangeDeltas(before, before.status, after.status));
        return;
      }
      case 'post.created':
        this.counters.add(tx, {
          [CountKeys.posts()]: 1,
          [CountKeys.postsByAuthor(change.post.authorId)]: 1,
        });
        return;
      case 'post.deleted':
        this.counters.add(tx, {
          [CountKeys.posts()]: -1,
          [CountKeys.postsByAuthor(change.post.authorId)]: -1,
        });
        return;
      case 'room.created':
        this.counters.add(tx, { [CountKeys.rooms()]: 1 });
        return;
      case 'message.sent':
        this.counters.add(tx, { [CountKeys.messagesOfRoom(change.message.roomId)]: 1 });
        return;
      default:
        // the other changes move no counted list (the audit log counts its own entries)
        return;
    }
  }
}
