import type { WebSocket } from 'ws';

/**
 * One subscription event sent to many sockets as the same bytes: the serialized result is made once
 * per group of subscribers (graphql-ws.server.ts) and only the operation id differs per socket.
 *
 * graphql-ws serializes every `next` message itself (`JSON.stringify({id, type, payload})`). For a
 * shared result `onNext` answers a small marker payload instead, having noted the bytes for that
 * operation id on the socket; the socket's `send` (wrapped once per connection) swaps the marker for
 * the bytes. An operation has at most one `next` in flight (graphql-ws awaits each send), so one
 * entry per operation id is enough; entries of a socket die with it.
 */
const MARKER_KEY = '__atriumSharedPayload';
const MARKER = Object.freeze({ [MARKER_KEY]: true });
const SUFFIX = `,"type":"next","payload":{"${MARKER_KEY}":true}}`;
const PREFIX = '{"id":';

const pendingOf = new WeakMap<WebSocket, Map<string, string>>();

/** Wraps the socket's `send` so that marker messages leave with their noted bytes. */
export function sendSharedBytes(ws: WebSocket): void {
  const pending = new Map<string, string>();
  pendingOf.set(ws, pending);
  const send = ws.send.bind(ws) as (data: unknown, cb?: (err?: Error) => void) => void;
  ws.send = ((data: unknown, ...rest: unknown[]) => {
    if (typeof data === 'string' && data.endsWith(SUFFIX) && data.startsWith(PREFIX)) {
      const idJson = data.slice(PREFIX.length, data.length - SUFFIX.length);
      const id = JSON.parse(idJson) as string;
      const bytes = pending.get(id);
      if (bytes !== undefined) {
        pending.delete(id);
        data = `${PREFIX}${idJson},"type":"next","payload":${bytes}}`;
      }
    }
    return (send as (...args: unknown[]) => void)(data, ...rest);
  }) as typeof ws.send;
}

/**
 * The payload `onNext` returns for operation `id` so that `bytes` (a serialized ExecutionResult) are
 * sent; undefined when the socket was not wrapped (then the result is serialized as usual).
 */
export function sharedPayload(ws: WebSocket, id: string, bytes: string): object | undefined {
  const pending = pendingOf.get(ws);
  if (!pending) {
    return undefined;
  }
  pending.set(id, bytes);
  return MARKER;
}
