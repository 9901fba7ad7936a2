import type { WebSocket } from 'ws';

/** Messages of one socket handed to graphql-ws per turn of the event loop. */
export const WS_MESSAGES_PER_TURN = 16;
/** Messages queued on one socket past which it stops reading (TCP backpressure on the client). */
export const WS_QUEUE_HIGH_WATER = 64;

/**
 * Hands a socket's messages to their listeners a few per turn of the event loop, in order, instead of
 * all at once. `ws` emits every message of a received chunk synchronously and graphql-ws starts each
 * one's handler without waiting for the previous: 10,000 operations sent in one burst started 10,000
 * handlers (credential check, limiter, execution) ahead of every other client's request, which then
 * waited seconds (bench/abuse.mjs). Now each socket starts at most WS_MESSAGES_PER_TURN per turn (at
 * once while under that, so ordinary traffic waits for nothing), the rest wait for later turns with
 * other clients' I/O served in between, and a socket with more than WS_QUEUE_HIGH_WATER messages
 * waiting is paused until its queue drains. Order is kept, so `complete` still follows `subscribe`.
 */
export function fairMessages(ws: WebSocket): void {
  const emit = ws.emit.bind(ws) as (event: string | symbol, ...args: unknown[]) => boolean;
  const queue: unknown[][] = [];
  /** Messages handed over in this turn; reset by the next drain. */
  let started = 0;
  let scheduled = false;
  const schedule = () => {
    if (!scheduled) {
      scheduled = true;
      setImmediate(drain);
    }
  };
  const drain = () => {
    scheduled = false;
    started = 0;
    while (started < WS_MESSAGES_PER_TURN && queue.length > 0) {
      started++;
      emit('message', ...(queue.shift() as unknown[]));
    }
    if (queue.length > 0 || started > 0) {
      schedule(); // the next turn starts a fresh count
    }
    if (queue.length === 0 && ws.isPaused) {
      ws.resume();
    }
  };
  ws.emit = ((event: string | symbol, ...args: unknown[]): boolean => {
    if (event !== 'message') {
      if (event === 'close') {
        queue.length = 0;
      }
      return emit(event, ...args);
    }
    if (queue.length === 0 && started < WS_MESSAGES_PER_TURN) {
      started++;
      schedule();
      return emit('message', ...args);
    }
    queue.push(args);
    if (queue.length > WS_QUEUE_HIGH_WATER && !ws.isPaused) {
      ws.pause();
    }
    schedule();
    return true;
  }) as typeof ws.emit;
}
