import { GraphQLError } from 'graphql';
import { BadRequest } from '../common/errors.js';
import { isRoomResync, type RoomResync } from '../events/events.service.js';
import { markPrecharged, RefusedEvent, type ReplayGate } from '../graphql/ws-replay.js';
import type { Message, MessageEvent } from '../domain/message.js';

/** The most missed messages `messageAdded(after:)` replays; more -> RESYNC_REQUIRED. */
export const MAX_REPLAY = 1_000;

/** The most rows one read of a replay asks for (a replay is read page by page, as it is consumed). */
export const REPLAY_PAGE = 100;

export function resyncRequired(): GraphQLError {
  return new GraphQLError(
    `More than ${MAX_REPLAY} messages were sent after this cursor: reload the room through Room.messages and subscribe again`,
    { extensions: { code: 'RESYNC_REQUIRED', maxReplay: MAX_REPLAY } },
  );
}

/**
 * Yielded once, last, by a stream whose reader fell more than MAX_REPLAY messages behind the room
 * (it stopped reading, or reads slower than the room is written), or whose socket holds more than
 * WS_SEND_BUFFER_BYTES of queued events: what a resume would meet, so the subscription ends with
 * RESYNC_REQUIRED instead of holding an ever longer queue.
 */
export const FELL_BEHIND: unique symbol = Symbol('fell behind');
export type RoomStreamItem = MessageEvent | typeof FELL_BEHIND | RefusedEvent;

export interface RoomStreamSources {
  /** Attaches a listener to this instance's live messages of the room; returns its detach. */
  listen: (listener: (message: MessageEvent | RoomResync) => void) => () => void;
  /** The room's last committed position (0: no message yet). */
  lastSeq: () => Promise<number>;
  /** Up to `limit` (at most REPLAY_PAGE) stored messages of the room from position `fromSeq` on, in order. */
  load: (fromSeq: number, limit: number) => Promise<Message[]>;
  /**
   * The socket's budget, replay slots and queue account (absent outside a WebSocket: nothing is
   * charged here then, and every event is charged when it is sent).
   */
  gate?: ReplayGate;
}

/** What a queued event is counted as against its socket's WS_SEND_BUFFER_BYTES (an estimate). */
function queuedBytes(message: Message): number {
  return 256 + Buffer.byteLength(message.content);
}

/**
 * The messages of a room after position `afterSeq`: first the stored ones (replay), then the live
 * ones, with no gap and no duplicate across the handover.
 *
 * Nothing is read before the consumer asks: the replay runs only while the consumer pulls (graphql-ws
 * pulls the next event once the previous one was written to the socket), one page of at most
 * REPLAY_PAGE rows at a time, each page charged to the identity's budget before it is read, under
 * one of the identity's and the instance's replay slots (ReplayGate).
 *
 * The live listener is attached BEFORE the room's last position is read. While the replay runs, live
 * messages are not kept, only the highest position they reached (`liveHigh`): every live message was
 * committed before it arrived, so the database has it and a later page reads it. The replay reads up
 * to max(last position at the start, liveHigh), then hands over synchronously: from then on every
 * live message past the last one passed is passed (an instance whose live stream lags may still
 * deliver a message the replay gave: it is dropped by its position). A send takes the room's row lock
 * and publishes after its commit, so every message not read commits later and reaches the listener.
 *
 * Rejects with BAD_USER_INPUT when `afterSeq` names no message of the room (a position not reached
 * yet), and with RESYNC_REQUIRED when more than MAX_REPLAY messages came after it; the listener is
 * detached in both cases. Positions run 1, 2, 3... without gaps in a room, so both are decided from
 * the room's last position, before any row is read.
 */
export async function resumableRoomStream(
  sources: RoomStreamSources,
  afterSeq: number,
): Promise<AsyncIterableIterator<RoomStreamItem>> {
  const gate = sources.gate;
  const queue: { item: RoomStreamItem; bytes: number }[] = [];
  let replaying = true;
  let liveHigh = 0;
  let last = afterSeq;
  let waiting: ((result: IteratorResult<RoomStreamItem, undefined>) => void) | undefined;
  let failed: ((err: unknown) => void) | undefined;
  let done = false;
  let pumping = false;
  let chargeSingly = false;
  const aborted = new AbortController();
  let releaseSlot: (() => void) | undefined;

  const freeSlot = () => {
    releaseSlot?.();
    releaseSlot = undefined;
  };
  const push = (item: RoomStreamItem, bytes: number) => {
    queue.push({ item, bytes });
    gate?.queue.add(bytes);
  };
  const clearQueue = () => {
    for (const { bytes } of queue) {
      gate?.queue.remove(bytes);
    }
    queue.length = 0;
  };
  const fallBehind = () => {
    // the reader is further behind than a resume could replay: end with RESYNC_REQUIRED
    done = true;
    detach();
    freeSlot();
    aborted.abort();
    clearQueue();
    queue.push({ item: FELL_BEHIND, bytes: 0 });
    flush();
  };
  const flush = () => {
    if (!waiting) {
      return;
    }
    const first = queue.shift();
    if (first) {
      gate?.queue.remove(first.bytes);
      const resolve = waiting;
      waiting = undefined;
      failed = undefined;
      resolve({ value: first.item, done: false });
    } else if (done) {
      const resolve = waiting;
      waiting = undefined;
      failed = undefined;
      resolve({ value: undefined, done: true });
    }
  };
  const pass = (message: MessageEvent) => {
    if (done || message.seq <= last) {
      return;
    }
    last = message.seq;
    if (waiting) {
      const resolve = waiting;
      waiting = undefined;
      failed = undefined;
      resolve({ value: message, done: false });
      return;
    }
    const bytes = queuedBytes(message);
    if (queue.length >= MAX_REPLAY || (gate && !gate.queue.fits(bytes))) {
      fallBehind();
      return;
    }
    push(message, bytes);
  };
  const detach = sources.listen((event) => {
    if (done) {
      return;
    }
    if (isRoomResync(event)) {
      // this instance's live stream lost more than it could fill (docs/realtime.md)
      if (replaying) {
        liveHigh = Math.max(liveHigh, event.toSeq); // the replay reads them from the database
      } else if (event.toSeq > last) {
        fallBehind();
      }
      return;
    }
    if (replaying) {
      liveHigh = Math.max(liveHigh, event.seq);
      if (liveHigh - last > MAX_REPLAY) {
        fallBehind(); // whether it reads or waits for a slot: more than a resume could replay
      }
    } else {
      pass(event);
    }
  });

  let target: number;
  try {
    target = await sources.lastSeq();
  } catch (err) {
    detach();
    throw err;
  }
  if (afterSeq > target) {
    detach();
    throw BadRequest('Invalid cursor in after', [
      { field: 'after', message: 'after names no message of this room' },
    ]);
  }
  if (target - afterSeq > MAX_REPLAY) {
    detach();
    throw resyncRequired();
  }

  /** One step of the replay: a page read (charged first), or the handover to the live stream. */
  const replayStep = async (): Promise<void> => {
    if (gate && !releaseSlot) {
      releaseSlot = await gate.slot(aborted.signal);
      if (done) {
        freeSlot();
        return;
      }
    }
    const head = Math.max(target, liveHigh);
    if (head - last > MAX_REPLAY) {
      fallBehind();
      return;
    }
    if (head <= last) {
      replaying = false; // synchronously with the check: every later live message is passed
      freeSlot();
      return;
    }
    const count = chargeSingly ? 1 : Math.min(REPLAY_PAGE, head - last);
    const refused = gate ? await gate.charge(count) : undefined;
    if (done) {
      return;
    }
    if (refused) {
      if (count > 1) {
        chargeSingly = true; // the budget's last points: event by event, as live events are charged
        return;
      }
      done = true;
      detach();
      freeSlot();
      queue.push({ item: new RefusedEvent(refused), bytes: 0 });
      return;
    }
    const page = await sources.load(last + 1, count);
    if (done) {
      return;
    }
    if (page.length === 0) {
      target = last; // nothing stored up to head (a room deleted meanwhile): go live
      liveHigh = Math.min(liveHigh, last);
      return;
    }
    for (const message of page) {
      if (message.seq > last) {
        last = message.seq;
        push(gate ? markPrecharged(message) : message, queuedBytes(message));
      }
    }
  };

  const pump = async () => {
    if (pumping) {
      return;
    }
    pumping = true;
    try {
      while (replaying && !done && queue.length === 0 && waiting) {
        await replayStep();
      }
    } catch (err) {
      if (!done) {
        done = true;
        detach();
        freeSlot();
        clearQueue();
        const reject = failed;
        waiting = undefined;
        failed = undefined;
        reject?.(err);
      }
    } finally {
      pumping = false;
      flush();
    }
  };

  const finish = (): IteratorResult<RoomStreamItem, undefined> => {
    if (!done) {
      done = true;
      detach();
      freeSlot();
      aborted.abort();
      clearQueue();
      flush();
    }
    return { value: undefined, done: true };
  };
  const iterator: AsyncIterableIterator<RoomStreamItem> = {
    next() {
      const first = queue.shift();
      if (first !== undefined) {
        gate?.queue.remove(first.bytes);
        // a queued (replayed) event is handed over in a later turn of the event loop: a replay
        // of hundreds of queued events would otherwise run as one chain of microtasks, and other
        // clients' requests would wait for all of it (docs/realtime.md, "Bounded replays")
        return new Promise((resolve) =>
          setImmediate(() => resolve({ value: first.item, done: false })),
        );
      }
      if (done) {
        return Promise.resolve({ value: undefined, done: true });
      }
      const result = new Promise<IteratorResult<RoomStreamItem, undefined>>((resolve, reject) => {
        waiting = resolve;
        failed = reject;
      });
      if (replaying) {
        void pump();
      }
      return result;
    },
    return() {
      return Promise.resolve(finish());
    },
    throw(err: unknown) {
      finish();
      return Promise.reject(err instanceof Error ? err : new Error(String(err)));
    },
    [Symbol.asyncIterator]() {
      return iterator;
    },
  };
  return iterator;
}
