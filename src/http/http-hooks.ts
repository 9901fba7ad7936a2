import { randomUUID } from 'node:crypto';
import { STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyAdapter } from '@nestjs/platform-fastify';
import type { FastifyInstance, FastifyReply, FastifyRequest, HTTPMethods } from 'fastify';
import { isPreflight, originAllowed } from './cors.js';
import { writeDeprecationHeaders } from '../common/deprecation-headers.js';
import { DomainError } from '../common/errors.js';
import { registerJsonParser, type JsonShapeLimits } from './json-shape.js';
import { etagOf, noneMatchHits } from './etag.js';
import { sendError } from './http-exception.filter.js';

const API_PREFIX = '/api/';
const V1 = /^\/api\/v1(\/|\?|$)/;
const OTHER_VERSION = /^\/api\/v\d+(\/|\?|$)/;
const DOCS = /^\/api\/docs(-json)?(\/|\?|$)/;
/** The exports negotiate their own media types (NDJSON, CSV: src/common/export-stream.ts). */
const EXPORTS = /^\/api\/v1\/(users|orders)\/export(\?|$)/;

function isV1Header(value: string): boolean {
  return /^v?1$/i.test(value.trim());
}

/** Unversioned `/api/<path>` with `Accept-Version: 1` is served as `/api/v1/<path>` (before routing). */
export function rewriteUrl(req: {
  url?: string;
  headers: Record<string, string | string[] | undefined>;
}): string {
  const url = req.url ?? '/';
  const version = req.headers['accept-version'];
  if (
    url.startsWith(API_PREFIX) &&
    !OTHER_VERSION.test(url) &&
    !DOCS.test(url) &&
    typeof version === 'string' &&
    isV1Header(version)
  ) {
    return `/api/v1/${url.slice(API_PREFIX.length)}`;
  }
  return url;
}

/** Versioning rules of docs/contract.md section 5 on the original URL. Returns true when it answered. */
function versioning(req: FastifyRequest, reply: FastifyReply): boolean {
  const url = req.originalUrl;
  if (!url.startsWith(API_PREFIX) || DOCS.test(url)) {
    return false;
  }
  const header = req.headers['accept-version'];
  const version = typeof header === 'string' ? header : undefined;
  if (V1.test(url)) {
    if (version !== undefined && !isV1Header(version)) {
      sendError(
        reply,
        new DomainError(
          'unsupported_version',
          `Accept-Version "${version}" contradicts the path version v1`,
        ),
      );
      return true;
    }
    return false;
  }
  if (OTHER_VERSION.test(url)) {
    sendError(
      reply,
      new DomainError('unsupported_version', 'Unsupported API version: the current version is v1'),
    );
    return true;
  }
  if (version !== undefined) {
    if (!isV1Header(version)) {
      sendError(
        reply,
        new DomainError('unsupported_version', `Unsupported Accept-Version "${version}": use 1`),
      );
      return true;
    }
    return false; // rewritten to v1 by rewriteUrl
  }
  const target = `/api/v1/${url.slice(API_PREFIX.length)}`;
  const permanent = req.method === 'GET' || req.method === 'HEAD' ? 301 : 308;
  void reply.code(permanent).header('Location', target).send();
  return true;
}

/** True when the Accept header admits a JSON response (any q > 0 range covering application/json). */
function acceptsJson(accept: string | undefined): boolean {
  if (!accept || accept.trim() === '') {
    return true;
  }
  return accept.split(',').some((range) => {
    const [type = '', ...params] = range.split(';').map((s) => s.trim().toLowerCase());
    const q = params.find((p) => p.startsWith('q='));
    if (q !== undefined && Number(q.slice(2)) <= 0) {
      return false;
    }
    return (
      type === '*/*' ||
      type === 'application/*' ||
      type === 'application/json' ||
      (type.startsWith('application/') && type.endsWith('+json'))
    );
  });
}

/** Method sets per route pattern, collected as routes are registered (for OPTIONS and Allow). */
class RouteTable {
  private readonly routes: { pattern: RegExp; static: boolean; methods: Set<string> }[] = [];

  add(url: string, method: HTTPMethods | HTTPMethods[]): void {
    if (url.includes('*')) {
      return;
    }
    const source = `^${url.replace(/[.+?^${}()|[\]\\]/g, '\\$&').replace(/:[A-Za-z0-9_]+/g, '[^/]+')}/?$`;
    let route = this.routes.find((r) => r.pattern.source === source);
    if (!route) {
      route = { pattern: new RegExp(source), static: !url.includes(':'), methods: new Set() };
      this.routes.push(route);
    }
    for (const m of Array.isArray(method) ? method : [method]) {
      if (m !== 'OPTIONS') {
        route.methods.add(m);
      }
    }
  }

  allowed(path: string): string[] {
    const matches = this.routes.filter((r) => r.pattern.test(path));
    const exact = matches.filter((r) => r.static);
    const chosen = exact.length > 0 ? exact : matches;
    const methods = new Set<string>();
    for (const r of chosen) {
      r.methods.forEach((m) => methods.add(m));
    }
    if (methods.size === 0) {
      return [];
    }
    if (methods.has('GET')) {
      methods.add('HEAD');
    }
    methods.add('OPTIONS');
    return ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'].filter((m) =>
      methods.has(m),
    );
  }
}

export interface HttpHookOptions {
  /** `CORS_ORIGINS`: a preflight from any other origin is answered here (204, no CORS headers). */
  corsOrigins: readonly string[];
  /** Depth and entry bounds of JSON bodies (application/json and merge-patch). */
  bodyShape: JsonShapeLimits;
  /**
   * Counts a request under /api/ that matched no route (404, or 405 for a known path) against the
   * client's request bucket; throws a `rate_limited` DomainError when it is used up. Set once the
   * application (and its rate limiter) exists.
   */
  countUnrouted?: (req: FastifyRequest, reply: FastifyReply) => Promise<void>;
  /** True from the shutdown signal on (src/http/shutdown.ts): responses carry `Connection: close`. */
  draining?: () => boolean;
}

/**
 * The HTTP rules that sit below the controllers: request ids, versioning, content negotiation,
 * OPTIONS/Allow, ETag + If-None-Match, and the JSON body types (merge patch in, text/plain out).
 * Registered on the Fastify instance before Nest adds its routes.
 */
export function registerHttpHooks(adapter: FastifyAdapter, options: HttpHookOptions): void {
  const fastify: FastifyInstance = adapter.getInstance();
  const routes = new RouteTable();
  // Graceful shutdown: from the signal on (draining) and once close() began, responses tell
  // keep-alive clients to hang up, so the server can close once in-flight requests are done instead
  // of waiting out idle sockets; a request arriving on such a connection after close() began is 503.
  let closing = false;
  fastify.addHook('preClose', (done) => {
    closing = true;
    done();
  });
  fastify.addHook('onRoute', (route) => routes.add(route.url, route.method));

  fastify.removeContentTypeParser('text/plain');
  registerJsonParser(fastify, options.bodyShape);

  // The adapter's own request hook runs before its CORS hook, so a plain OPTIONS is answered here.
  adapter.setOnRequestHook(
    (req: FastifyRequest, reply: FastifyReply, done: (err?: Error) => void) => {
      void reply.header('X-Request-Id', req.id);
      if (closing) {
        // the server no longer accepts connections; this one was open (keep-alive) when it closed
        sendError(
          reply,
          new DomainError(
            'service_unavailable',
            'The server is shutting down; retry on a new connection',
          ),
        );
        return;
      }
      if (versioning(req, reply)) {
        return;
      }
      const path = req.url.split('?', 1)[0] ?? '/';
      if (req.method === 'OPTIONS') {
        const allowed = routes.allowed(path);
        if (allowed.length > 0) {
          void reply.header('Allow', allowed.join(', '));
        }
        if (isPreflight(req) && !originAllowed(req.headers.origin ?? '', options.corsOrigins)) {
          // refused: an answer without CORS headers is the refusal (the browser stops there);
          // a 404 would claim the path does not exist
          void reply.code(204).header('Vary', 'Origin').send();
          return;
        }
        if (!isPreflight(req)) {
          if (allowed.length === 0) {
            sendError(reply, new DomainError('not_found', `No route ${path}`));
          } else {
            void reply.code(200).header('Content-Length', '0').send();
          }
          return;
        }
      } else if (req.is404) {
        const allowed = routes.allowed(path);
        const answer = () => {
          if (allowed.length === 0) {
            done(); // the not-found handler answers 404
            return;
          }
          // a known path asked with a method it does not serve: 405 with Allow (RFC 9110 15.5.6)
          void reply.header('Allow', allowed.join(', '));
          sendError(
            reply,
            new DomainError('method_not_allowed', `${req.method} is not supported on ${path}`),
          );
        };
        const count = options.countUnrouted;
        if (count === undefined || !path.startsWith(API_PREFIX)) {
          answer();
          return;
        }
        // no route, so no request guard: the refusal still costs the client a request
        count(req, reply).then(answer, (err: unknown) => {
          if (err instanceof DomainError) {
            sendError(reply, err);
          } else {
            done(err instanceof Error ? err : new Error(String(err)));
          }
        });
        return;
      } else if (
        path.startsWith(API_PREFIX) &&
        !DOCS.test(path) &&
        !EXPORTS.test(path) &&
        !acceptsJson(req.headers.accept)
      ) {
        sendError(
          reply,
          new DomainError('not_acceptable', 'This endpoint only produces application/json'),
        );
        return;
      }
      done();
    },
  );

  fastify.addHook('onSend', (req, reply, payload, done) => {
    writeDeprecationHeaders(req, reply);
    if (closing || options.draining?.()) {
      void reply.header('Connection', 'close');
    }
    if (
      (req.method === 'GET' || req.method === 'HEAD') &&
      reply.statusCode === 200 &&
      typeof payload === 'string' &&
      req.url.startsWith(API_PREFIX)
    ) {
      const etag = etagOf(payload);
      void reply.header('ETag', etag);
      void reply.header('Cache-Control', 'private, no-cache');
      const vary = reply.getHeader('vary');
      void reply.header(
        'Vary',
        `${vary ? `${String(vary)}, ` : ''}Accept, Accept-Version, Authorization, X-API-Key`,
      );
      if (noneMatchHits(req.headers['if-none-match'], etag)) {
        void reply.code(304);
        reply.removeHeader('Content-Type');
        reply.removeHeader('Content-Length');
        done(null, '');
        return;
      }
    }
    done(null, payload);
  });
}

/**
 * The error envelope for answers the HTTP layer gives before a request reaches a route: the status
 * says what went wrong (400, 408, 414, 431), the code is `bad_request` (docs/limits.md).
 */
function envelope(message: string): string {
  return JSON.stringify({ error: { code: 'bad_request', message } });
}

const CLIENT_ERRORS: Record<string, [number, string]> = {
  ERR_HTTP_REQUEST_TIMEOUT: [408, 'The request was not received in time'],
  HPE_HEADER_OVERFLOW: [431, 'The request line and headers exceed 16 KiB'],
};

/**
 * Node's `clientError` (a request the HTTP parser refused, or one whose headers or body did not
 * arrive within HTTP_HEADERS_TIMEOUT_MS / HTTP_REQUEST_TIMEOUT_MS): one envelope answer, then the
 * connection is closed. Replaces Fastify's default, which answers `{"error":"Bad Request",...}`.
 */
export function clientErrorHandler(
  err: NodeJS.ErrnoException & { rawPacket?: unknown },
  socket: Socket,
): void {
  if (err.code === 'ECONNRESET' || socket.destroyed) {
    return;
  }
  const [status, message] = CLIENT_ERRORS[err.code ?? ''] ?? [400, 'Malformed HTTP request'];
  if (socket.writable) {
    const body = envelope(message);
    socket.write(
      `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? ''}\r\n` +
        `Content-Type: application/json; charset=utf-8\r\n` +
        `Content-Length: ${Buffer.byteLength(body)}\r\n` +
        `X-Request-Id: ${randomUUID()}\r\n` +
        `Connection: close\r\n\r\n${body}`,
    );
  }
  socket.destroy();
}

/**
 * Fastify's router refusals (before any hook runs): a URL that does not decode (400) and a path
 * parameter over `maxParamLength` (414). Answered in the envelope, with the security headers.
 */
export function frameworkErrorHandler(securityHeaders: Record<string, string>) {
  return (error: { code?: string }, req: FastifyRequest, reply: FastifyReply): void => {
    const tooLong = error.code === 'FST_ERR_MAX_PARAM_LENGTH';
    void reply
      .headers(securityHeaders)
      .header('X-Request-Id', req.id)
      .code(tooLong ? 414 : 400)
      .header('Content-Type', 'application/json; charset=utf-8')
      .send(
        envelope(
          tooLong
            ? `A path segment exceeds ${MAX_PARAM_LENGTH} characters`
            : 'The URL is not valid (malformed percent-encoding)',
        ),
      );
  };
}

/** Longest path parameter the router accepts (ids are ~30 characters); longer is 414. */
export const MAX_PARAM_LENGTH = 100;
