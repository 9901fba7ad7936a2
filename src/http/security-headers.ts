import type { IncomingMessage, ServerResponse } from 'node:http';
import type { FastifyReply, FastifyRequest } from 'fastify';
import helmet, { type HelmetOptions } from 'helmet';

/**
 * helmet's response headers, computed once at boot. @fastify/helmet runs all of helmet's middlewares
 * on every request (~25 µs of CPU here, parsing the CSP directives each time); none of our options
 * depends on the request, so the result is the same header set every time (docs/performance.md).
 */
export function staticSecurityHeaders(options: HelmetOptions): Record<string, string> {
  const headers: Record<string, string> = {};
  const res = {
    setHeader(name: string, value: string | number | readonly string[]) {
      headers[name] = Array.isArray(value) ? value.join(', ') : String(value);
      return this;
    },
    removeHeader(name: string) {
      delete headers[name];
    },
    getHeader(name: string) {
      return headers[name];
    },
  };
  let failure: unknown;
  helmet(options)({} as IncomingMessage, res as unknown as ServerResponse, (err?: unknown) => {
    failure = err;
  });
  if (failure) {
    throw failure instanceof Error ? failure : new Error('helmet failed to compute its headers');
  }
  return headers;
}

/**
 * The policy of every response but the pages that set their own (GraphiQL, the OAuth pages). Swagger UI
 * (/api/docs) is the only HTML it covers: its scripts, styles and fonts are files of this origin, its
 * "Try it out" calls go to this origin (the document's server is relative, `/`), whatever address the
 * page was opened at. No `upgrade-insecure-requests` (helmet's default): over plain http on a host name
 * other than localhost it made the browser fetch the page's own files over https, and the page was blank.
 * `Strict-Transport-Security` stays: browsers ignore it over plain http.
 */
export const SECURITY_HEADER_OPTIONS: HelmetOptions = {
  contentSecurityPolicy: {
    useDefaults: false,
    directives: {
      defaultSrc: ["'self'"],
      scriptSrc: ["'self'"],
      // Swagger UI's page has <style> elements and sets style attributes
      styleSrc: ["'self'", "'unsafe-inline'"],
      imgSrc: ["'self'", 'data:'],
      fontSrc: ["'self'", 'data:'],
      connectSrc: ["'self'"],
      objectSrc: ["'none'"],
      scriptSrcAttr: ["'none'"],
      baseUri: ["'self'"],
      formAction: ["'self'"],
      frameAncestors: ["'self'"],
    },
  },
  crossOriginEmbedderPolicy: false,
};

/**
 * The headers of every answer that is not an HTML page (JSON, NDJSON, text, scripts): the OWASP REST
 * Security Cheat Sheet's set for APIs (Content-Type is each answer's own), helmet's HSTS. The document-only headers
 * (COOP, CORP, Origin-Agent-Cluster, Referrer-Policy, X-DNS-Prefetch-Control, X-Download-Options,
 * X-Permitted-Cross-Domain-Policies, X-XSS-Protection) mean nothing to a client reading JSON; HTML pages
 * get helmet's full set (`addPageHeaders`). Names are lower case, as Fastify stores them
 * (docs/contract.md "Security headers", docs/performance.md).
 */
export function apiSecurityHeaders(page: Record<string, string>): Record<string, string> {
  const hsts = page['Strict-Transport-Security'];
  if (hsts === undefined) {
    throw new Error('helmet computed no Strict-Transport-Security header');
  }
  return {
    // a route that may be cached says so itself (GET: `private, no-cache` with its ETag)
    'cache-control': 'no-store',
    'content-security-policy': API_CSP,
    'strict-transport-security': hsts,
    'x-content-type-options': 'nosniff',
    'x-frame-options': 'DENY',
  };
}

const API_CSP = "frame-ancestors 'none'";

/**
 * An `onSend` hook: an HTML answer gets helmet's full set (`page`) over the API set written at the
 * start of every request. A page that wrote its own Content-Security-Policy (the GraphQL IDE, the
 * OAuth pages) keeps it and its X-Frame-Options, and gets the headers it lacks.
 */
export function addPageHeaders(page: Record<string, string>) {
  const entries = Object.entries(page).map(([name, value]) => [name.toLowerCase(), value] as const);
  return (
    _req: FastifyRequest,
    reply: FastifyReply,
    payload: unknown,
    done: (err: null, payload: unknown) => void,
  ): void => {
    const type = reply.getHeader('content-type');
    if (typeof type === 'string' && type.startsWith('text/html')) {
      const ownPolicy = reply.getHeader('content-security-policy') !== API_CSP;
      for (const [name, value] of entries) {
        if (!ownPolicy || reply.getHeader(name) === undefined) {
          void reply.header(name, value);
        }
      }
    }
    done(null, payload);
  };
}
