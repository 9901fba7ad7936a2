import type { IncomingMessage, ServerResponse } from 'node:http';
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
