import { randomUUID } from 'node:crypto';
import { STATUS_CODES, type IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { Injectable } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import type { FastifyInstance } from 'fastify';
import type { ErrorCode } from '../common/errors.js';
import { redactUrl } from '../http/logging.js';
import { secondsUntil, writeRateLimitHeaders } from '../common/rate-limit-headers.js';
import { MetricsService } from '../metrics/metrics.service.js';
import { RateLimitService } from '../rate-limit/rate-limit.service.js';
import { SocketLimitsService } from '../rate-limit/socket-limits.service.js';

/**
 * How long a refused upgrade's socket stays open after the answer was handed to the kernel: enough
 * for the client to read it, too short for a client that never reads to hold the socket.
 */
const REFUSAL_GRACE_MS = 1_000;
/** Longest a refused upgrade may wait for its answer (the rate-limit counter is slow or down). */
const REFUSAL_DEADLINE_MS = 5_000;
const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/** One refusal: the status, the envelope's code and message, extra headers. */
export interface UpgradeRefusal {
  status: number;
  code: ErrorCode;
  message: string;
  headers?: Record<string, string>;
  /** Counted against the address's request bucket (all refusals but the 503 while draining). */
  counted: boolean;
}

/** An upgrade on a path that has no WebSocket endpoint (every path but /graphql). */
export function noWebSocketEndpoint(path: string): UpgradeRefusal {
  return {
    status: 404,
    code: 'not_found',
    message: `No WebSocket endpoint at ${path.length > 200 ? `${path.slice(0, 200)}...` : path}: only /graphql upgrades (graphql-transport-ws); send other requests without Upgrade`,
    counted: true,
  };
}

/**
 * A WebSocket handshake on /graphql that `ws` refuses (its `wsClientError` message): a method other
 * than GET is 405, a missing or invalid `Sec-WebSocket-*` header 400 (the version with the versions
 * served, as RFC 6455 asks).
 */
export function handshakeRefusal(message: string): UpgradeRefusal {
  if (/method/i.test(message)) {
    return {
      status: 405,
      code: 'method_not_allowed',
      message: 'A WebSocket upgrade is a GET request',
      headers: { Allow: 'GET' },
      counted: true,
    };
  }
  return {
    status: 400,
    code: 'bad_request',
    message: `WebSocket handshake refused: ${message}`,
    headers: /version/i.test(message) ? { 'Sec-WebSocket-Version': '13, 8' } : undefined,
    counted: true,
  };
}

/**
 * Upgrade requests that are not accepted (docs/limits.md "WebSocket upgrades"). Node hands an
 * `Upgrade` request to the server's `upgrade` listeners with the raw socket and no response object:
 * whatever is not taken over must be answered and closed here, or the socket stays open forever
 * (one file descriptor per request). The answer is the REST error envelope with `X-Request-Id` and
 * `Connection: close`; the socket is ended, then destroyed after {@link REFUSAL_GRACE_MS} whatever the
 * client does. Each refusal counts one request against the client address's request bucket (429 once
 * it is used up), is logged like a request (`upgrade refused`, a 429 at warn) and is recorded in
 * `atrium_http_request_duration_seconds` with route `upgrade`.
 */
@Injectable()
export class UpgradeRefusals {
  constructor(
    private readonly adapterHost: HttpAdapterHost,
    private readonly rateLimits: RateLimitService,
    private readonly sockets: SocketLimitsService,
    private readonly metrics: MetricsService,
  ) {}

  refuse(req: IncomingMessage, socket: Duplex, refusal: UpgradeRefusal): void {
    const started = performance.now();
    let timer = setTimeout(() => socket.destroy(), REFUSAL_DEADLINE_MS);
    timer.unref();
    // Node took its own listeners off the socket when it emitted `upgrade`: without one, a reset
    // from the client would be an uncaught error
    socket.on('error', () => socket.destroy());
    socket.once('close', () => clearTimeout(timer));
    const address = this.sockets.clientAddress(req);
    void this.count(address, refusal).then((answer) => {
      if (socket.destroyed) {
        return; // the client left before the answer
      }
      const requestId = requestIdOf(req);
      socket.end(responseText(answer, requestId));
      // read and drop whatever the client still sends, so the close is a FIN, not a reset that
      // could discard the answer before the client read it
      socket.resume();
      clearTimeout(timer);
      timer = setTimeout(() => socket.destroy(), REFUSAL_GRACE_MS);
      timer.unref();
      this.record(req, address, requestId, answer, started);
    });
  }

  /** The refusal, or a 429 once the address's request bucket is used up. */
  private async count(address: string, refusal: UpgradeRefusal): Promise<UpgradeRefusal> {
    if (!refusal.counted) {
      return refusal;
    }
    let hit;
    try {
      hit = await this.rateLimits.countRefusedRequest(undefined, address);
    } catch {
      hit = undefined; // counter store unavailable: fail open, as for requests
    }
    if (hit === undefined) {
      return refusal;
    }
    const headers: Record<string, string> = {};
    writeRateLimitHeaders(
      (name, value) => (headers[name] = value),
      this.rateLimits.requestLimit,
      hit,
    );
    if (hit.allowed) {
      return { ...refusal, headers: { ...refusal.headers, ...headers } };
    }
    return {
      status: 429,
      code: 'rate_limited',
      message: `Too many requests; retry in ${secondsUntil(hit.resetMs)} s`,
      headers: { ...headers, 'Retry-After': String(secondsUntil(hit.resetMs)) },
      counted: true,
    };
  }

  private record(
    req: IncomingMessage,
    address: string,
    requestId: string,
    answer: UpgradeRefusal,
    started: number,
  ): void {
    const method = req.method ?? 'GET';
    const seconds = (performance.now() - started) / 1000;
    this.metrics.recordHttp(method, 'upgrade', answer.status, seconds);
    const log = this.adapterHost.httpAdapter.getInstance<FastifyInstance>().log;
    const line = {
      request_id: requestId,
      event: answer.status === 429 ? 'rate_limited' : 'upgrade_refused',
      req: { method, url: redactUrl(req.url), ip: address },
      res: { statusCode: answer.status },
      upgrade: String(req.headers.upgrade ?? '').slice(0, 50),
      responseTime: seconds * 1000,
    };
    if (answer.status === 429) {
      log.warn(line, 'upgrade refused: rate limited');
    } else {
      log.info(line, 'upgrade refused');
    }
  }
}

/** `X-Request-Id` as for every response: the client's when well-formed, else a new one. */
function requestIdOf(req: IncomingMessage): string {
  const header = req.headers['x-request-id'];
  return typeof header === 'string' && REQUEST_ID.test(header) ? header : randomUUID();
}

function responseText(answer: UpgradeRefusal, requestId: string): string {
  const body = JSON.stringify({ error: { code: answer.code, message: answer.message } });
  const headers: Record<string, string> = {
    'Content-Type': 'application/json; charset=utf-8',
    'Content-Length': String(Buffer.byteLength(body)),
    'Cache-Control': 'no-store',
    'X-Content-Type-Options': 'nosniff',
    'X-Request-Id': requestId,
    ...answer.headers,
    Connection: 'close',
  };
  const lines = Object.entries(headers).map(([name, value]) => `${name}: ${value}\r\n`);
  return `HTTP/1.1 ${answer.status} ${STATUS_CODES[answer.status] ?? ''}\r\n${lines.join('')}\r\n${body}`;
}
