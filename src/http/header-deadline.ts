import type { Server } from 'node:http';
import type { Socket } from 'node:net';

/** The error Node itself gives a late request (`clientErrorHandler` answers it 408). */
function requestTimeout(): NodeJS.ErrnoException {
  return Object.assign(new Error('Request timeout'), { code: 'ERR_HTTP_REQUEST_TIMEOUT' });
}

/**
 * Whether Node has parsed a request head on `socket` that no listener saw as `request` (one it
 * answered itself, such as a 417 to an unknown `Expect`): a request or response still in progress,
 * or no HTTP parser any more.
 */
function headParsed(socket: Socket): boolean {
  const s = socket as Socket & { parser?: { incoming?: unknown } | null; _httpMessage?: unknown };
  return !s.parser || Boolean(s.parser.incoming) || Boolean(s._httpMessage);
}

/**
 * The first request on every connection must have its line and headers in within `headersTimeoutMs`
 * of the connection's start, or the connection gets the `408` envelope (through the server's
 * `clientError` handler, as Node's own timeout does) and is closed.
 *
 * Node enforces `headersTimeout` only from a timer it starts when the server begins listening, and
 * only for the connections it tracked from then on. Where that check does not run, a client that
 * sends half a request head and then nothing holds its socket for good (slowloris): that was
 * reported on freshly started instances, though it did not reproduce on the Node versions tested
 * (docs/limits.md "HTTP connections"). This deadline is the service's own, one timer per
 * connection that is cleared when the first request's head is complete, so the bound holds either
 * way. Later requests on a keep-alive connection rely on Node's check alone.
 */
export function installHeaderDeadline(server: Server, headersTimeoutMs: number): void {
  const timers = new WeakMap<Socket, NodeJS.Timeout>();
  const clear = (socket: Socket) => {
    const timer = timers.get(socket);
    if (timer) {
      clearTimeout(timer);
      timers.delete(socket);
    }
  };
  server.on('connection', (socket: Socket) => {
    const timer = setTimeout(() => {
      timers.delete(socket);
      if (!socket.destroyed && !headParsed(socket)) {
        server.emit('clientError', requestTimeout(), socket);
      }
    }, headersTimeoutMs);
    timer.unref();
    timers.set(socket, timer);
    socket.once('close', () => clear(socket));
  });
  // the head is complete once Node hands the request (or the upgrade) to its listeners
  server.prependListener('request', (req) => clear(req.socket));
  server.prependListener('upgrade', (req) => clear(req.socket));
}
