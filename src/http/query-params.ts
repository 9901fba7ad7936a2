import type { OpenAPIObject, ParameterObject, ReferenceObject } from '@nestjs/swagger';
import type { FastifyRequest } from 'fastify';
import { BadRequest, type ErrorDetail } from '../common/errors.js';
import { routeUrl } from '../common/route-url.js';

const METHODS = ['get', 'put', 'post', 'delete', 'patch'] as const;

/** `METHOD /api/v1/users/:id`: a route as Fastify names it (`req.method`, `req.routeOptions.url`). */
function routeKey(method: string, url: string): string {
  return `${method.toUpperCase()} ${url}`;
}

/**
 * The query parameters each REST operation accepts, read from the OpenAPI document the app serves
 * (built from the controllers' `@ApiQuery`/`ApiPage` metadata), so what is documented is exactly
 * what is accepted: the operation's `in: query` parameters plus the query-carried security schemes
 * (`api_key`, accepted on every route). Keyed by `METHOD /fastify/:url`; only `/api/` operations.
 */
export function queryParamsByRoute(document: OpenAPIObject): Map<string, ReadonlySet<string>> {
  const everywhere = Object.values(document.components?.securitySchemes ?? {})
    .filter((s) => !('$ref' in s) && s.type === 'apiKey' && s.in === 'query')
    .map((s) => (s as { name: string }).name);
  const routes = new Map<string, ReadonlySet<string>>();
  for (const [path, item] of Object.entries(document.paths)) {
    if (!path.startsWith('/api/')) {
      continue;
    }
    const url = path.replace(/\{([^}]+)\}/g, ':$1');
    for (const method of METHODS) {
      const operation = item[method];
      if (!operation) {
        continue;
      }
      const names = new Set(everywhere);
      for (const p of [...(item.parameters ?? []), ...(operation.parameters ?? [])] as (
        | ParameterObject
        | ReferenceObject
      )[]) {
        if (!('$ref' in p) && p.in === 'query') {
          names.add(p.name);
        }
      }
      routes.set(routeKey(method, url), names);
      if (method === 'get') {
        routes.set(routeKey('head', url), names); // Fastify's HEAD route of every GET
      }
    }
  }
  return routes;
}

/**
 * docs/contract.md section 5: a query parameter the route does not document is refused (400
 * `bad_request`, `details` naming each), and so is a parameter given twice (`?limit=1&limit=2`: which
 * one would count is not obvious, so neither does). A step of the REST request guard
 * (src/app.guard.ts) after the rate limit (a refused request has been counted like any other), so
 * before the route's own interceptors and pipes. The allowed names are looked up once per request in
 * a map built at boot; REST routes only (GraphQL and the OAuth protocol endpoints have their own
 * parameters, health probes and /metrics take none and ignore the query).
 */
export class QueryParamsCheck {
  constructor(private readonly routes: Map<string, ReadonlySet<string>>) {}

  /** Throws 400 for undocumented or repeated parameters. */
  check(req: FastifyRequest): void {
    const url = routeUrl(req);
    const allowed = url === undefined ? undefined : this.routes.get(routeKey(req.method, url));
    if (allowed === undefined) {
      return;
    }
    const query = req.query as Record<string, unknown> | undefined;
    let details: ErrorDetail[] | undefined;
    for (const name in query) {
      if (!allowed.has(name)) {
        (details ??= []).push({ field: name, message: 'unknown query parameter' });
      } else if (Array.isArray(query[name])) {
        (details ??= []).push({ field: name, message: `${name} is given more than once` });
      }
    }
    if (details) {
      const unknown = details.filter((d) => d.message === 'unknown query parameter');
      const what =
        unknown.length === details.length
          ? 'Unknown query parameters'
          : unknown.length === 0
            ? 'Repeated query parameters'
            : 'Unknown or repeated query parameters';
      throw BadRequest(`${what}: ${details.map((d) => d.field).join(', ')}`, details);
    }
  }
}
