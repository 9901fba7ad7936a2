import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { GraphQLError, type GraphQLFormattedError } from 'graphql';
import { parseBounded } from './document-limits.js';
import { formatGraphqlError } from './format-error.js';
import { acceptsGraphqlResult, prefersHtml, wantsGraphqlResponseJson } from './media-type.js';
import { routeUrl } from '../common/route-url.js';

/**
 * Bounds on GraphQL `variables` of WebSocket operations (docs/graphql.md "Limits"), the defaults of
 * the JSON body bounds that cover HTTP (BODY_MAX_DEPTH, BODY_MAX_ITEMS): nesting depth
 * (`{"a":[1]}` is 2) and object members plus array elements, all levels together.
 */
const VARIABLES_LIMITS = { maxDepth: 32, maxItems: 10_000 } as const;

/** Why `variables` breaks the bounds, or undefined. Iterative: a hostile depth cannot overflow. */
export function variablesViolation(
  variables: unknown,
  limits: { maxDepth: number; maxItems: number } = VARIABLES_LIMITS,
): string | undefined {
  if (variables === null || typeof variables !== 'object') {
    return undefined;
  }
  let items = 0;
  const stack: [unknown, number][] = [[variables, 1]];
  while (stack.length > 0) {
    const [value, depth] = stack.pop() as [unknown, number];
    if (depth > limits.maxDepth) {
      return `variables nest deeper than ${limits.maxDepth} levels`;
    }
    const children = Array.isArray(value) ? value : Object.values(value as object);
    items += children.length;
    if (items > limits.maxItems) {
      return `variables hold more than ${limits.maxItems} entries`;
    }
    for (const child of children) {
      if (child !== null && typeof child === 'object') {
        stack.push([child, depth + 1]);
      }
    }
  }
  return undefined;
}

/** The error for variables over the bounds: Apollo's BAD_REQUEST (a malformed request, like a body over them). */
export function variablesTooLarge(reason: string): GraphQLError {
  return new GraphQLError(`Invalid variables: ${reason}`, {
    extensions: { code: 'BAD_REQUEST' },
  });
}

/** Parse outcomes by query text, so a hot query is parsed once more here, not on every request. */
const checked = new Map<string, GraphQLError | null>();
const MAX_CACHED = 1000;
const MAX_CACHED_LENGTH = 20_000;

/** The error a document gets before validation (a limit, or a repeated argument), else null. */
function documentRefusal(query: string): GraphQLError | null {
  const known = checked.get(query);
  if (known !== undefined) {
    return known;
  }
  const result = parseBounded(query);
  const code = result instanceof GraphQLError ? result.extensions.code : undefined;
  // syntax errors are left to Apollo, which reports them as it always has
  const refusal =
    code === 'QUERY_TOO_COMPLEX' || code === 'GRAPHQL_VALIDATION_FAILED'
      ? (result as GraphQLError)
      : null;
  if (query.length <= MAX_CACHED_LENGTH) {
    if (checked.size >= MAX_CACHED) {
      checked.clear();
    }
    checked.set(query, refusal);
  }
  return refusal;
}

/** Apollo's words for a request whose `Accept` allows no result type. */
const NOT_ACCEPTABLE =
  "An 'accept' header was provided for this request which does not accept " +
  'application/json; charset=utf-8 or application/graphql-response+json; charset=utf-8';

/**
 * Refuses a GraphQL request before Apollo sees it, in GraphQL's error shape: 400 when the client
 * accepts `application/graphql-response+json` (GraphQL over HTTP), else 200 (or `status`).
 */
export function sendGraphqlRefusal(
  req: FastifyRequest,
  reply: FastifyReply,
  error: GraphQLError,
  status?: number,
): void {
  const strict = wantsGraphqlResponseJson(req.headers.accept);
  const formatted: GraphQLFormattedError = formatGraphqlError(error.toJSON(), error);
  void reply
    .code(status ?? (strict ? 400 : 200))
    .header(
      'content-type',
      strict
        ? 'application/graphql-response+json; charset=utf-8'
        : 'application/json; charset=utf-8',
    )
    .header('cache-control', 'no-store')
    .send(JSON.stringify({ errors: [formatted] }));
}

/**
 * One step of the GraphQL pre-handler: it reads (and may rewrite) the request's parameters (a POST's
 * JSON body or a GET's query string). False when it has answered the request itself.
 */
export type GraphqlPreStep = (
  req: FastifyRequest,
  reply: FastifyReply,
  params: Record<string, unknown>,
) => boolean;

/**
 * The one Fastify preHandler before Apollo on `POST|GET <path>`: the route is checked and the
 * parameters read once, then each step runs in order until one answers (trusted documents first,
 * which may put a listed body in place of a `documentId`, then `requestLimits`).
 */
export function registerGraphqlPreHandler(
  fastify: FastifyInstance,
  path: string,
  steps: readonly GraphqlPreStep[],
): void {
  fastify.addHook('preHandler', (req, reply, done) => {
    if ((req.method !== 'POST' && req.method !== 'GET') || routeUrl(req) !== path) {
      done();
      return;
    }
    const params = req.method === 'GET' ? req.query : req.body;
    if (!params || typeof params !== 'object' || Array.isArray(params)) {
      done();
      return;
    }
    for (const step of steps) {
      if (!step(req, reply, params as Record<string, unknown>)) {
        return;
      }
    }
    done();
  });
}

/**
 * Before Apollo: an operation whose `Accept` allows no result type is refused with 406 before it
 * runs (Apollo's own check comes after execution). A document over the limits of document-limits.ts
 * (tokens, fields, aliases, same-name field pairs, arguments, directives) is refused with
 * QUERY_TOO_COMPLEX before graphql-js validation could spend seconds on it. Status as for every
 * GraphQL request error: 400 under application/graphql-response+json, 200 under application/json.
 * Apollo's plugins cannot do this: an exception thrown before `didResolveOperation` is a 500.
 * (Variables over HTTP are bounded earlier, by the JSON body parser and the GET query-string check
 * of app.factory.ts, with the same numbers as VARIABLES_LIMITS.)
 */
export const requestLimits: GraphqlPreStep = (req, reply, params) => {
  const accept = req.headers.accept;
  if (
    !acceptsGraphqlResult(accept) &&
    (req.method === 'POST' || (params.query !== undefined && !prefersHtml(accept)))
  ) {
    // Apollo negotiates this after executing the operation: a mutation would be applied, then 406
    const error = new GraphQLError(NOT_ACCEPTABLE, { extensions: { code: 'BAD_REQUEST' } });
    sendGraphqlRefusal(req, reply, error, 406);
    return false;
  }
  if (typeof params.query === 'string') {
    const refusal = documentRefusal(params.query);
    if (refusal) {
      sendGraphqlRefusal(req, reply, refusal);
      return false;
    }
  }
  return true;
};
