import { GraphQLError } from 'graphql';
import { BadRequest } from '../common/errors.js';
import type { Message, MessageEvent } from './message.js';

/** The most missed messages `messageAdded(after:)` replays; more -> RESYNC_REQUIRED. */
export const MAX_REPLAY = 1_000;

export function resyncRequired(): GraphQLError {
  return new GraphQLError(
    `More than ${MAX_REPLAY} messages were sent after this cursor: reload the room through Room.messages and subscribe again`,
    { extensions: { code: 'RESYNC_REQUIRED', maxReplay: MAX_REPLAY } },
  );
}

/**
 * Yielded once, last, by a stream whose reader fell more than MAX_REPLAY messages behind the room
 * (it stopped reading, or reads slower than the room is written): what a resume would meet, so the
 * subscription ends with RESYNC_REQUIRED instead of holding an ever longer queue.
 */
export const FELL_BEHIND: unique symbol = Symbol('fell behind');
export type RoomStreamItem = MessageEvent | typeof FELL_BEHIND;

export interface RoomStreamSources {
  /** Attaches a listener to this instance's live messages of the room; returns its detach. */
  listen: (listener: (message: MessageEvent) => void) => () => void;
  /** Up to `limit` stored messages of the room from position `fromSeq` on, in order. */
  load: (fromSeq: number, limit: number) => Promise<Message[]>;
}

/**
 * The messages of a room after position `afterSeq`: first the stored ones (replay), then the live
 * ones, with no gap and no duplicate across the handover.
 *
 * The live listener is attached BEFORE the stored messages are read. A send takes the room's row
 * lock and publishes only after its commit, so the seqs of a room commit in order: the read sees
 * every message up to some position N, and every message after N commits later and therefore reaches
 * the listener (which is already attached). Live messages that arrive while the read runs are held,
 * then everything live is passed on only if its seq is past the last one passed (the read and the
 * live stream overlap around N, and an instance whose live stream lags may still deliver a message
 * the replay already gave).
 *
 * Rejects with BAD_USER_INPUT when `afterSeq` names no message of the room (a position not reached
 * yet), and with RESYNC_REQUIRED when more than MAX_REPLAY messages came after it; the listener is
 * detached in both cases.
 */
export async function resumableRoomStream(
  sources: RoomStreamSources,
  afterSeq: number,
): Promise<AsyncIterableIterator<RoomStreamItem>> {
  const queue: RoomStreamItem[] = [];
  let held: MessageEvent[] | undefined = [];
  let last = afterSeq;
  let waiting: ((result: IteratorResult<RoomStreamItem, undefined>) => void) | undefined;
  let done = false;

  const pass = (message: MessageEvent) => {
    if (done || message.seq <= last) {
      return;
    }
    last = message.seq;
    if (waiting) {
      const resolve = waiting;
      waiting = undefined;
      resolve({ value: message, done: false });
    } else {
      queue.push(message);
      if (queue.length > MAX_REPLAY) {
        // the reader is further behind than a resume could replay: end with RESYNC_REQUIRED
        done = true;
        detach();
        queue.length = 0;
        queue.push(FELL_BEHIND);
      }
    }
  };
  const detach = sources.listen((message) => {
    if (held) {
      held.push(message);
    } else {
      pass(message);
    }
  });

  let stored: Message[];
  try {
    // the cursor's own message and up to MAX_REPLAY + 1 after it: one range read
    stored = await sources.load(afterSeq, MAX_REPLAY + 2);
  } catch (err) {
    detach();
    throw err;
  }
  if (stored[0]?.seq !== afterSeq) {
    detach();
    throw BadRequest('Invalid cursor in after', [
      { field: 'after', message: 'after names no message of this room' },
    ]);
  }
  if (stored.length > MAX_REPLAY + 1) {
    detach();
    throw resyncRequired();
  }
  for (const message of stored.slice(1)) {
    pass(message);
  }
  const caughtUp = held;
  held = undefined;
  for (const message of caughtUp) {
    pass(message);
  }

  const finish = (): IteratorResult<RoomStreamItem, undefined> => {
    if (!done) {
      done = true;
      detach();
      queue.length = 0;
      const resolve = waiting;
      waiting = undefined;
      resolve?.({ value: undefined, done: true });
    }
    return { value: undefined, done: true };
  };
  const iterator: AsyncIterableIterator<RoomStreamItem> = {
    next() {
      const message = queue.shift();
      if (message !== undefined) {
        return Promise.resolve({ value: message, done: false });
      }
      if (done) {
        return Promise.resolve({ value: undefined, done: true });
      }
      return new Promise((resolve) => (waiting = resolve));
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
