import { Injectable, Logger } from '@nestjs/common';
import type { TxContext } from '../database/database.service.js';
import type { Change } from './change.js';

/**
 * A subscriber of the change record: what follows from a change, derived by the subscriber alone.
 * `inTransaction` runs inside the change's transaction, when the change is recorded (its writes
 * commit or roll back with the change; a throw rolls the transaction back). `afterCommit` runs
 * once the transaction has committed, never after a rollback (a throw is logged: the change stays).
 */
export interface ChangeSubscriber {
  readonly name: string;
  inTransaction?(tx: TxContext, change: Change): void | Promise<void>;
  afterCommit?(change: Change): void | Promise<void>;
}

/**
 * The one place a write says what it changed (docs/data-integrity.md, "The change record"). A
 * service calls `record(tx, change)` once per change, inside its transaction; the subscribers (the
 * webhook outbox, the audit log, the list counters, the event bus) derive their effects. The
 * transaction's changes are kept per TxContext; after-commit work is queued on the transaction's
 * own `afterCommit`, so it runs only when the transaction committed, in the order recorded.
 */
@Injectable()
export class ChangeRecord {
  private readonly logger = new Logger('ChangeRecord');
  private readonly subscribers: ChangeSubscriber[] = [];
  /** The changes recorded in each open transaction, in order. */
  private readonly recorded = new WeakMap<TxContext, Change[]>();

  /** Subscribers run in the order they subscribed. */
  subscribe(subscriber: ChangeSubscriber): () => void {
    this.subscribers.push(subscriber);
    return () => {
      const at = this.subscribers.indexOf(subscriber);
      if (at >= 0) {
        this.subscribers.splice(at, 1);
      }
    };
  }

  /** Records `change` in `tx`: the in-transaction subscribers run now, the others after commit. */
  async record(tx: TxContext, change: Change): Promise<void> {
    let changes = this.recorded.get(tx);
    if (!changes) {
      changes = [];
      this.recorded.set(tx, changes);
      const ofTx = changes;
      tx.afterCommit(() => this.afterCommit(ofTx));
    }
    changes.push(change);
    for (const subscriber of this.subscribers) {
      await subscriber.inTransaction?.(tx, change);
    }
  }

  /** What `tx` has recorded so far. */
  changesOf(tx: TxContext): readonly Change[] {
    return this.recorded.get(tx) ?? [];
  }

  private async afterCommit(changes: readonly Change[]): Promise<void> {
    for (const change of changes) {
      for (const subscriber of this.subscribers) {
        if (!subscriber.afterCommit) {
          continue;
        }
        try {
          await subscriber.afterCommit(change);
        } catch (err) {
          this.logger.error(
            { err, change: change.type, subscriber: subscriber.name },
            'after-commit subscriber failed',
          );
        }
      }
    }
  }
}
