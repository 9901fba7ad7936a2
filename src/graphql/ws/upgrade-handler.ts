import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import type { WebSocketServer } from 'ws';
import type { AppConfig } from '../../config/config.js';
import { originAllowed } from '../../http/cors.js';
import type { ShutdownState } from '../../http/shutdown.js';
import type { SocketLimitsService } from '../../rate-limit/socket-limits.service.js';
import { sendSharedBytes } from '../shared-event-bytes.js';
import { noWebSocketEndpoint, type UpgradeRefusals } from '../upgrade-refusals.js';
import { fairMessages } from '../ws-fair-queue.js';

/** What the upgrade handler needs of the server. */
export interface UpgradeDeps {
  path: string;
  config: AppConfig;
  shutdown: ShutdownState;
  limits: SocketLimitsService;
  refusals: UpgradeRefusals;
  /** The WebSocket server, once bootstrapped. */
  wss: () => WebSocketServer | undefined;
  /** Where a socket's underlying stream is kept (for the send-buffer accounting). */
  transports: WeakMap<object, Duplex>;
}

/**
 * The HTTP server's `upgrade` handler: takes over the WebSocket upgrades of the GraphQL path, and
 * answers and closes every other one (upgrade-refusals.ts: Node gives no response object here, and
 * an unanswered socket stays open for good).
 */
export function upgradeHandler(d: UpgradeDeps) {
  /**
   * A page of this server itself (GraphiQL at /graphql) opening its socket: the Origin's host is the
   * host the request was addressed to, so no CORS_ORIGINS entry is needed for the address the page
   * was opened at (127.0.0.1, a LAN name, the proxy's name). A cross-site page cannot send another
   * Origin.
   */
  const sameOrigin = (origin: string, req: IncomingMessage): boolean => {
    let host: string;
    try {
      host = new URL(origin).host;
    } catch {
      return false;
    }
    return host !== '' && d.limits.requestHosts(req).includes(host);
  };
  return (req: IncomingMessage, socket: Duplex, head: Buffer): void => {
    // every upgrade not taken over is answered and closed (upgrade-refusals.ts): Node gives no
    // response object here, and an unanswered socket stays open for good
    const path = (req.url ?? '/').split('?', 1)[0] ?? '/';
    if (path !== d.path) {
      d.refusals.refuse(req, socket, noWebSocketEndpoint(path));
      return;
    }
    if (d.shutdown.draining) {
      // a new socket would be closed with 1001 in a moment: open it on another instance
      d.refusals.refuse(req, socket, {
        status: 503,
        code: 'service_unavailable',
        message: 'The server is shutting down; open the WebSocket again (another instance)',
        headers: { 'Retry-After': '1' },
        counted: false,
      });
      return;
    }
    const origin = req.headers.origin;
    if (
      origin !== undefined &&
      !sameOrigin(origin, req) &&
      !originAllowed(origin, d.config.corsOrigins)
    ) {
      d.refusals.refuse(req, socket, {
        status: 403,
        code: 'forbidden',
        message: 'Origin not allowed',
        counted: true,
      });
      return;
    }
    const wss = d.wss();
    if (!wss) {
      socket.destroy(); // not bootstrapped (the listener is added once it is): nothing to answer with
      return;
    }
    if (String(req.headers.upgrade).toLowerCase() !== 'websocket') {
      d.refusals.refuse(req, socket, {
        status: 400,
        code: 'bad_request',
        message:
          'Only WebSocket upgrades (graphql-transport-ws) are served on /graphql; send GraphQL over HTTP without Upgrade',
        counted: true,
      });
      return;
    }
    wss.handleUpgrade(req, socket, head, (ws) => {
      fairMessages(ws); // a burst of messages on one socket must not starve other clients
      sendSharedBytes(ws); // a subscription event's bytes are made once per group
      d.transports.set(ws, socket);
      wss.emit('connection', ws, req);
    });
  };
}
