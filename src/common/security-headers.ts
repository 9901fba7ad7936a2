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

export const SECURITY_HEADER_OPTIONS: HelmetOptions = {
  // Swagger UI needs inline scripts and styles; the JSON API itself serves no HTML.
  contentSecurityPolicy: {
    directives: {
      defaultSrc: ["'self'"],
      scriptSrc: ["'self'", "'unsafe-inline'"],
      styleSrc: ["'self'", "'unsafe-inline'"],
      imgSrc: ["'self'", 'data:'],
    },
  },
  crossOriginEmbedderPolicy: false,
};
