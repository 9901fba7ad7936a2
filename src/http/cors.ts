import type { FastifyCorsOptions } from '@fastify/cors';
import type { FastifyAdapter } from '@nestjs/platform-fastify';
import type { FastifyRequest } from 'fastify';
import { wrapNestCorsHook } from '../common/library-internals.js';

/**
 * Origin matching for browsers (REST, GraphQL over HTTP and the WebSocket upgrade), from
 * `CORS_ORIGINS` (docs/limits.md, "CORS"):
 *
 * - an exact origin (`https://app.example.com`), or `scheme://host:*` for any port of a host, is
 *   allowed WITH credentials: the response echoes the origin and sends
 *   `Access-Control-Allow-Credentials: true`;
 * - `*` allows every other origin WITHOUT credentials: the response says `Access-Control-Allow-Origin: *`
 *   and no `Access-Control-Allow-Credentials`, so a browser never sends cookies or reads a credentialed
 *   response on the strength of a wildcard (Fetch standard, CORS protocol and credentials);
 * - the opaque origin `null` (sandboxed iframes, `file:` pages, some redirects) is never allowed, not
 *   even by `*`: anyone can produce it.
 */
export type OriginGrant = { allowOrigin: string; credentials: boolean };

/** Allowed as an explicit entry (exact, or `host:*` = any port). */
function explicitlyAllowed(origin: string, allowed: readonly string[]): boolean {
  return allowed.some((entry) => {
    if (entry === origin) {
      return true;
    }
    if (entry.endsWith(':*')) {
      const base = entry.slice(0, -2);
      if (origin === base) {
        return true;
      }
      if (!origin.startsWith(`${base}:`)) {
        return false;
      }
      return /^\d{1,5}$/.test(origin.slice(base.length + 1));
    }
    return false;
  });
}

/** What a request from `origin` is granted, or undefined when the origin is refused. */
function originGrant(
  origin: string | undefined,
  allowed: readonly string[],
): OriginGrant | undefined {
  if (origin === undefined || origin === '' || origin === 'null') {
    return undefined;
  }
  if (explicitlyAllowed(origin, allowed)) {
    return { allowOrigin: origin, credentials: true };
  }
  if (allowed.includes('*')) {
    return { allowOrigin: '*', credentials: false };
  }
  return undefined;
}

/** True when `origin` may use the API from a browser (with or without credentials). */
export function originAllowed(origin: string, allowed: readonly string[]): boolean {
  return originGrant(origin, allowed) !== undefined;
}

/** Request headers a browser may send cross-origin (the preflight's Access-Control-Allow-Headers). */
const CORS_ALLOWED_HEADERS = [
  'Authorization',
  'Content-Type',
  'Accept',
  'Accept-Version',
  'If-Match',
  'If-None-Match',
  'Idempotency-Key',
  'traceparent',
  'tracestate',
  'X-API-Key',
  'X-Request-Id',
  'apollo-require-preflight',
  'apollographql-client-name',
  'apollographql-client-version',
  // Apollo Client sends it; docs/graphql.md names it as an alternative to apollo-require-preflight.
  'x-apollo-operation-name',
];

const CORS_EXPOSED_HEADERS = [
  'ETag',
  'Idempotent-Replayed',
  'Link',
  'Location',
  'X-Request-Id',
  'RateLimit-Limit',
  'RateLimit-Remaining',
  'RateLimit-Reset',
  'RateLimit-Cost-Remaining',
  'Retry-After',
  'WWW-Authenticate',
];

const CORS_METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'];

/** True for a CORS preflight (`OPTIONS` with `Origin` and `Access-Control-Request-Method`). */
export function isPreflight(req: FastifyRequest): boolean {
  return (
    req.method === 'OPTIONS' &&
    req.headers.origin !== undefined &&
    req.headers['access-control-request-method'] !== undefined
  );
}

/**
 * The options delegate of @fastify/cors (per request, so that a wildcard grant and an explicit one
 * differ in credentials). A refused origin gets no CORS headers at all (only `Vary: Origin`); its
 * preflight is answered 204 by the request hook in http-hooks.ts, before this runs.
 */
export function corsOptionsDelegate(allowed: readonly string[]) {
  const base = {
    methods: CORS_METHODS,
    allowedHeaders: CORS_ALLOWED_HEADERS,
    exposedHeaders: CORS_EXPOSED_HEADERS,
    maxAge: 600,
    strictPreflight: false,
    optionsSuccessStatus: 200,
  } satisfies FastifyCorsOptions;
  const refused: FastifyCorsOptions = { ...base, origin: false };
  const wildcard: FastifyCorsOptions = { ...base, origin: '*', credentials: false };
  return (
    req: FastifyRequest,
    cb: (error: Error | null, options: FastifyCorsOptions) => void,
  ): void => {
    const grant = originGrant(req.headers.origin, allowed);
    if (!grant) {
      cb(null, refused);
    } else if (!grant.credentials) {
      cb(null, wildcard);
    } else {
      cb(null, { ...base, origin: grant.allowOrigin, credentials: true });
    }
  };
}

/**
 * Requests without `Origin` (everything but browsers) skip @fastify/cors: for them its hook only
 * adds `Origin` to `Vary` (the options delegate refuses them), but it first spreads the options
 * twice and builds the route options twice per request (11.7 % of a REST GET, docs/performance.md).
 * Nest runs the hook `app.enableCors()` registered as the adapter's `corsHook` (and copies `Vary`
 * and `Access-Control-*` to the raw response after it), so wrapping that one function changes
 * nothing else; a request with `Origin`, or whose reply already has a `Vary`, goes through
 * @fastify/cors as before. `corsHook` is the adapter's private field, reached through
 * src/common/library-internals.ts: if an upgrade of @nestjs/platform-fastify renames it, this
 * throws at boot (every test fails) instead of silently losing the saving. Call once Fastify is ready (its plugins, @fastify/cors among them, are loaded
 * then), after `app.enableCors()`.
 */
export function skipCorsWithoutOrigin(adapter: FastifyAdapter): void {
  wrapNestCorsHook(adapter, (cors) => (req, reply, done) => {
    if (req.headers.origin === undefined && !reply.hasHeader('vary')) {
      void reply.header('Vary', 'Origin');
      done();
      return;
    }
    cors(req, reply, done);
  });
}
