import type { FastifyInstance } from 'fastify';

/**
 * The development landing page (GraphiQL) loads React and GraphiQL from unpkg and runs an inline
 * script; the global helmet policy (self only) would block it. Only that HTML page gets this policy.
 */
const GRAPHIQL_CSP = [
  "default-src 'self'",
  "script-src 'self' 'unsafe-inline' https://unpkg.com",
  "style-src 'self' 'unsafe-inline' https://unpkg.com",
  "font-src 'self' data: https://unpkg.com",
  "img-src 'self' data: https://unpkg.com",
  "connect-src 'self' ws: wss:",
].join('; ');

export function allowLandingPageAssets(fastify: FastifyInstance, path: string): void {
  fastify.addHook('onSend', (req, reply, payload, done) => {
    if (
      req.url.split('?', 1)[0] === path &&
      String(reply.getHeader('content-type') ?? '').startsWith('text/html')
    ) {
      void reply.header('Content-Security-Policy', GRAPHIQL_CSP);
    }
    done(null, payload);
  });
}
