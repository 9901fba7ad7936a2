import type { FastifyInstance, FastifyRequest } from 'fastify';

const ROUTE_URL = Symbol('routeUrl');

type MemoRequest = FastifyRequest & { [ROUTE_URL]: string | null | undefined };

/**
 * The pattern of the route a request reached (`/api/v1/users/:id`), or undefined when none matched.
 * Fastify's `request.routeOptions` builds a new object of thirteen fields on every read; the hooks,
 * the guard and the metrics of one request read the pattern about six times, so it is read once
 * and kept on the request.
 */
export function routeUrl(req: FastifyRequest): string | undefined {
  const memo = req as MemoRequest;
  let url = memo[ROUTE_URL];
  if (url === undefined) {
    url = req.routeOptions.url ?? null;
    memo[ROUTE_URL] = url;
  }
  return url ?? undefined;
}

/** Declares the memo's slot, so every request object keeps one shape (Fastify's `decorateRequest`). */
export function registerRouteUrl(fastify: FastifyInstance): void {
  fastify.decorateRequest(ROUTE_URL, undefined);
}
