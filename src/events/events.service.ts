import { EventEmitter } from 'node:events';
import {
  Inject,
  Injectable,
  Logger,
  type OnApplicationBootstrap,
  type OnModuleDestroy,
} from '@nestjs/common';
import { RedisPubSub } from 'graphql-redis-subscriptions';
import { PubSub, type PubSubEngine } from 'graphql-subscriptions';
import type { Redis } from 'ioredis';
import { MetricsService } from '../metrics/metrics.service.js';
import { firstConnection } from '../redis/redis.module.js';
import { LIVE_SOURCE, type LiveSource } from './live-source.js';
import { RoomSequencer, type SequencerOutcome } from './room-sequencer.js';

/** The shared bus between instances: RedisPubSub with REDIS_URL, in-process PubSub without. */
export const PUB_SUB = Symbol('PUB_SUB');

/** Channels on the shared bus (prefixed with REDIS_PREFIX on Redis). */
export const CHANNELS = {
  userUpdated: 'events:userUpdated',
  messageSent: 'events:messageSent',
} as const;

/** Topics of this instance's local fan-out, which the GraphQL subscriptions listen to. */
export const TOPICS = {
  newMessage: 'newMessage',
  messageAdded: (roomId: string) => `messageAdded:${roomId}`,
  userUpdated: (userId: string) => `userUpdated:${userId}`,
} as const;

/** Every event on the bus: when it was published (ms since the epoch), for the delivery-lag metric. */
interface BusEvent {
  publishedAt?: number;
}

/**
 * What the bus needs of its payloads. The bus sits below the features that publish on it, so it names
 * no feature's types: the publishers and subscribers of a topic agree on its payload (the user as
 * src/users reads it; the message with its author and room, as src/messages builds it).
 */
export interface UserPayload {
  id: string;
}
export interface MessagePayload {
  roomId: string;
  /** Its room's commit order (set from the bus event when a sender's payload lacks it). */
  seq?: number;
}

/**
 * Where the sequencer's starting points come from: every room's last sequence number (the rooms
 * table's repository, bound in the app module).
 */
export abstract class RoomSequenceSource {
  abstract lastSeqs(): Promise<{ id: string; lastSeq: number }[]>;
}

/**
 * Where the sequencer fills the gaps of the live stream from: a room's stored messages from a
 * position on, in order (the messages table's repository, bound in the app module).
 */
export abstract class RoomMessagesSource {
  abstract listFrom(roomId: string, fromSeq: number, limit: number): Promise<MessagePayload[]>;
}

/** The largest gap of one room that an instance fills from the database; larger -> RESYNC_REQUIRED. */
const MAX_GAP_FILL = 1_000;
/** Rows per read of a gap fill. */
const GAP_FILL_PAGE = 100;

/**
 * Published on a room's local topics (and newMessage) in place of messages `fromSeq`..`toSeq` that
 * this instance's live stream lost and could not fill from the database (more than MAX_GAP_FILL, or
 * the read failed): its subscribers get RESYNC_REQUIRED instead of a silent gap.
 */
export interface RoomResync {
  resync: true;
  roomId: string;
  fromSeq: number;
  toSeq: number;
}

export function isRoomResync(value: unknown): value is RoomResync {
  return typeof value === 'object' && value !== null && (value as RoomResync).resync === true;
}

/** A sent message on the bus: `seq` is its room's sequence number (commit order, see RoomSequencer). */
export interface MessageSentEvent extends BusEvent {
  message: MessagePayload;
  seq: number;
}

interface UserUpdatedEvent extends BusEvent {
  user: UserPayload;
}

/** Channel names as metric labels. */
const CHANNEL_LABELS: Record<string, string> = {
  [CHANNELS.userUpdated]: 'user_updated',
  [CHANNELS.messageSent]: 'message_sent',
};

/**
 * Domain events. Services publish them after their transaction commits (never from inside it), so a
 * rolled-back change publishes nothing.
 *
 * Two stages: the shared bus (PUB_SUB) carries each event once per instance; every instance holds one
 * subscription per channel on it, restores per-room commit order and fans the event out locally to
 * its GraphQL subscribers, one local topic per room / user id (no per-subscriber filtering, no
 * per-subscriber Redis subscription). See docs/realtime.md.
 */
@Injectable()
export class EventsService implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger(EventsService.name);
  private readonly emitter = new EventEmitter();
  /** Local fan-out to this instance's subscribers. */
  readonly local: PubSub;
  private readonly sequencer = new RoomSequencer<MessageSentEvent & { roomId: string }>(
    (e) => this.deliverMessage(e),
    undefined,
    (what, count) => this.sequencerOutcome(what, count),
    {
      maxFill: MAX_GAP_FILL,
      fill: (roomId, fromSeq, toSeq) => this.storedMessages(roomId, fromSeq, toSeq),
      resync: (roomId, fromSeq, toSeq) => {
        const marker: RoomResync = { resync: true, roomId, fromSeq, toSeq };
        void this.local.publish(TOPICS.newMessage, marker);
        void this.local.publish(TOPICS.messageAdded(roomId), marker);
      },
    },
  );
  private busSubscriptions: number[] = [];
  /** Listeners that stand for several subscribers (a shared group): how many (listenerCount). */
  private readonly weights = new Map<(...args: unknown[]) => void, () => number>();

  constructor(
    @Inject(PUB_SUB) readonly pubSub: PubSubEngine,
    private readonly metrics: MetricsService,
    private readonly rooms: RoomSequenceSource,
    private readonly stored: RoomMessagesSource,
  ) {
    this.emitter.setMaxListeners(0); // one listener per subscriber: hundreds per room are normal
    this.local = new PubSub({ eventEmitter: this.emitter });
  }

  /** After `ms`, or at once when the Redis subscriber's first connection is refused. */
  private async subscribeDeadline(ms: number): Promise<'timeout'> {
    const deadline = Date.now() + ms;
    const subscriber = this.pubSub instanceof RedisPubSub ? this.pubSub.getSubscriber() : undefined;
    if (subscriber && !(await firstConnection(subscriber as unknown as Redis, ms))) {
      return 'timeout';
    }
    await new Promise((resolve) => setTimeout(resolve, deadline - Date.now()).unref());
    return 'timeout';
  }

  async onApplicationBootstrap(): Promise<void> {
    // rooms that exist now resume after their last message; rooms created later start at 1
    for (const room of await this.rooms.lastSeqs()) {
      this.sequencer.seed(room.id, room.lastSeq);
    }
    const subscribed = Promise.all([
      this.pubSub.subscribe(
        CHANNELS.messageSent,
        (e: MessageSentEvent) => this.onMessageSent(e),
        {},
      ),
      this.pubSub.subscribe(
        CHANNELS.userUpdated,
        (e: UserUpdatedEvent) => this.onUserUpdated(e),
        {},
      ),
    ]).then(
      (ids) => {
        this.busSubscriptions = ids;
        return 'subscribed' as const;
      },
      (err: unknown) => {
        this.logger.error({ err }, 'could not subscribe to the event bus');
        return 'failed' as const;
      },
    );
    this.watchReconnects();
    // With Redis down at boot the subscriptions wait in the subscriber's queue and complete when it
    // connects; the app still starts (messages sent meanwhile: docs/realtime.md, "Gaps of the live stream").
    const timeout = this.subscribeDeadline(3_000);
    if ((await Promise.race([subscribed, timeout])) === 'timeout') {
      this.logger.warn(
        'event bus subscriptions still pending (Redis unreachable?); they complete on connect',
      );
    }
  }

  onModuleDestroy(): void {
    // In-process bus: detach. Redis bus: nothing to send; RedisConnections quits both connections at
    // shutdown (RedisPubSub.unsubscribe would issue UNSUBSCRIBE without handling its rejection).
    if (!(this.pubSub instanceof RedisPubSub)) {
      for (const id of this.busSubscriptions) {
        this.pubSub.unsubscribe(id);
      }
    }
    this.busSubscriptions = [];
    this.sequencer.close();
    this.emitter.removeAllListeners();
    this.weights.clear();
  }

  // ---- publishing (after commit) -----------------------------------------------------------

  userUpdated(user: UserPayload): Promise<void> {
    return this.publish(CHANNELS.userUpdated, {
      user,
      publishedAt: Date.now(),
    } satisfies UserUpdatedEvent);
  }

  messageSent(message: MessagePayload, seq: number): Promise<void> {
    return this.publish(CHANNELS.messageSent, {
      message,
      seq,
      publishedAt: Date.now(),
    } satisfies MessageSentEvent);
  }

  // ---- subscribing (this instance's subscribers) -------------------------------------------

  newMessages<M extends MessagePayload>(): AsyncIterableIterator<M> {
    return this.live<M>(TOPICS.newMessage);
  }

  roomMessages<M extends MessagePayload>(roomId: string): AsyncIterableIterator<M> {
    return this.live<M>(TOPICS.messageAdded(roomId));
  }

  /**
   * Calls `listener` with every message of the room this instance delivers, in commit order, from
   * now on (synchronously with the local fan-out); the function returned detaches it. For streams
   * that must know the exact moment they started listening (the replay of `messageAdded(after:)`).
   */
  listenRoom<M extends MessagePayload>(roomId: string, listener: (message: M) => void): () => void {
    const topic = TOPICS.messageAdded(roomId);
    this.emitter.on(topic, listener);
    return () => this.emitter.off(topic, listener);
  }

  userUpdates<U extends UserPayload>(userId: string): AsyncIterableIterator<U> {
    return this.live<U>(TOPICS.userUpdated(userId));
  }

  /**
   * A local topic's events from the first `next()` on, as an async iterator that also carries its
   * LiveSource: the WebSocket server serves subscribers that share a document, variables and
   * credential from one listener on the topic (see live-source.ts).
   */
  private live<T>(topic: string): AsyncIterableIterator<T> {
    const iterator = this.local.asyncIterableIterator<T>(topic);
    const source: LiveSource = {
      key: topic,
      listen: (listener, weight) => {
        this.weights.set(listener, weight);
        this.emitter.on(topic, listener);
        return () => {
          this.emitter.off(topic, listener);
          this.weights.delete(listener);
        };
      },
    };
    return Object.assign(iterator, { [LIVE_SOURCE]: source });
  }

  /** Subscribers of a local topic on this instance (tests wait on it before triggering events). */
  listenerCount(topic: string): number {
    let count = 0;
    for (const listener of this.emitter.listeners(topic)) {
      count += this.weights.get(listener as (...args: unknown[]) => void)?.() ?? 1;
    }
    return count;
  }

  // ---- internals ---------------------------------------------------------------------------

  /**
   * A failed publish (Redis down) is counted and logged, not dropped: the change has committed, this
   * instance delivers a message event to its own subscribers at once, and the other instances fill it
   * from the database (the next message of the room reveals the gap; the bus's reconnect fills the
   * rooms' tails). A user event has no such store: it is lost, and counted as dropped.
   */
  private async publish(channel: string, payload: object): Promise<void> {
    const label = CHANNEL_LABELS[channel] ?? channel;
    try {
      await this.pubSub.publish(channel, payload);
      this.metrics.eventsPublished.inc({ channel: label });
    } catch (err) {
      this.metrics.eventsPublishFailed.inc({ channel: label });
      if (channel === CHANNELS.messageSent) {
        this.logger.warn({ err }, `event on ${channel} not published: the bus is unavailable`);
        this.onMessageSent(payload as MessageSentEvent);
      } else {
        this.metrics.eventsDropped.inc({ channel: label, reason: 'publish_failed' });
        this.logger.warn({ err }, `event on ${channel} lost: the bus is unavailable`);
      }
    }
  }

  private sequencerOutcome(what: SequencerOutcome, count: number): void {
    const channel = 'message_sent';
    if (what === 'filled') {
      this.metrics.eventsGapFilled.inc({ channel }, count);
    } else if (what === 'late') {
      this.metrics.eventsLate.inc({ channel }, count);
    } else {
      this.metrics.eventsDropped.inc({ channel, reason: what }, count);
    }
  }

  /** Messages `fromSeq`..`toSeq` of a room from the database, in pages of GAP_FILL_PAGE rows. */
  private async storedMessages(
    roomId: string,
    fromSeq: number,
    toSeq: number,
  ): Promise<(MessageSentEvent & { roomId: string })[]> {
    const out: (MessageSentEvent & { roomId: string })[] = [];
    for (let from = fromSeq; from <= toSeq; ) {
      const page = await this.stored.listFrom(
        roomId,
        from,
        Math.min(GAP_FILL_PAGE, toSeq - from + 1),
      );
      for (const message of page) {
        const seq = message.seq ?? 0;
        if (seq >= from && seq <= toSeq) {
          out.push({ message, seq, roomId });
        }
      }
      if (page.length === 0) {
        break;
      }
      from = (page[page.length - 1]?.seq ?? toSeq) + 1;
    }
    return out;
  }

  /**
   * When the Redis subscriber reconnects after an outage, every room's last seq is read and what this
   * instance has not delivered up to it is filled from the database: the messages lost at the end of
   * the outage, which no later message would reveal.
   */
  private watchReconnects(): void {
    if (!(this.pubSub instanceof RedisPubSub)) {
      return;
    }
    const subscriber = this.pubSub.getSubscriber() as unknown as Redis;
    let lost = false;
    subscriber.on('close', () => (lost = true));
    subscriber.on('ready', () => {
      if (!lost) {
        return;
      }
      lost = false;
      void this.rooms.lastSeqs().then(
        (rooms) => {
          for (const room of rooms) {
            this.sequencer.catchUp(room.id, room.lastSeq);
          }
        },
        (err: unknown) => this.logger.warn({ err }, 'could not read the rooms after a reconnect'),
      );
    });
  }

  /** Publish (on whichever instance) to local fan-out; wall clocks, so across hosts it includes their skew. */
  private observeLag(channel: string, event: BusEvent): void {
    if (typeof event.publishedAt === 'number') {
      this.metrics.eventLag.observe(
        { channel },
        Math.max(0, Date.now() - event.publishedAt) / 1000,
      );
    }
  }

  private onMessageSent(e: MessageSentEvent): void {
    if (!e?.message?.roomId || typeof e.seq !== 'number') {
      return;
    }
    this.sequencer.push({ ...e, roomId: e.message.roomId });
  }

  private deliverMessage(event: MessageSentEvent): void {
    this.observeLag('message_sent', event);
    const message = event.message;
    message.seq ??= event.seq; // sent by an instance whose messages did not carry it yet
    void this.local.publish(TOPICS.newMessage, message);
    void this.local.publish(TOPICS.messageAdded(message.roomId), message);
  }

  private onUserUpdated(e: UserUpdatedEvent): void {
    if (e?.user?.id) {
      this.observeLag('user_updated', e);
      void this.local.publish(TOPICS.userUpdated(e.user.id), e.user);
    }
  }
}
