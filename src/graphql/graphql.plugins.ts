import {
  HeaderMap,
  type ApolloServerPlugin,
  type GraphQLRequestContextDidResolveOperation,
  type GraphQLRequestContextResponseForOperation,
  type GraphQLRequestContextWillSendResponse,
  type GraphQLRequestListener,
  type GraphQLResponse,
} from '@apollo/server';
import { GraphQLError, OperationTypeNode } from 'graphql';
import { operationCachePolicy } from './cache-policy.js';
import type { GqlContext } from './context.js';
import { formatGraphqlError } from './format-error.js';
import { introspectionResult, isIntrospectionQuery } from './introspection-cache.js';
import { wantsGraphqlResponseJson } from './media-type.js';
import { operationGate } from './operation-gate.js';
import { authenticationRequired } from './operation-rules.js';
import { jsonSizeOf, MAX_RESPONSE_BYTES, responseTooLarge } from './response-size.js';
import { recordHttpOperation } from './graphql-telemetry.js';
import type { MetricsService } from '../metrics/metrics.service.js';

function withStatus(error: GraphQLError, status: number): GraphQLError {
  Object.assign(error.extensions, { http: { status } });
  return error;
}

/**
 * A malformed request keeps its 400 under application/json too: Apollo's BAD_REQUEST, and Apollo's
 * own errors that carry an HTTP status but no code (e.g. a persisted query whose hash does not match).
 */
function isMalformedRequest(error: GraphQLError): boolean {
  const { code, http } = error.extensions as { code?: unknown; http?: { status?: number } };
  return code === 'BAD_REQUEST' || (code === undefined && http?.status === 400);
}

/** Subscriptions need a stream: over HTTP they are a malformed request (400 in both media types). */
function subscriptionOverHttp(): GraphQLError {
  return new GraphQLError(
    'Subscriptions are served over WebSocket (graphql-transport-ws) at /graphql, not over HTTP',
    { extensions: { code: 'BAD_REQUEST', http: { status: 400 } } },
  );
}

/**
 * Before execution: subscriptions are refused (WebSocket only); anonymous callers only introspect; the operation's cost is computed (and kept on
 * `context.cost` for the rate-limit budget) and refused beyond the limit. Request errors answer 4xx
 * under application/graphql-response+json and 200 under application/json (GraphQL over HTTP).
 *
 * Other plugins that need the cost (e.g. a per-identity budget) read `context.cost` in their own
 * `didResolveOperation`, which Apollo runs after this one, and may add members to it; every member
 * of `context.cost` is reported in `extensions.cost`.
 *
 * Introspection-only queries are not executed again: their answer comes from a per-schema cache
 * (introspection-cache.ts), charged like any other answer.
 *
 * After execution: an answer over MAX_RESPONSE_BYTES is replaced by one error (large text fields
 * already stop resolving once they alone pass it: response-size.ts), and `Cache-Control` comes from
 * the operation's `@cacheControl` hints (cache-policy.ts): `max-age=N, private` for the most
 * restrictive hint of the fields selected, and `no-store` for mutations, responses with errors and
 * anything with maxAge 0 (private data such as `me` and `email`). Responses to authenticated
 * requests are never `public`: a shared cache must not replay one caller's data to another.
 *
 * Nothing here listens to `willResolveField`: with no such listener Apollo leaves the schema's
 * resolvers unwrapped, so a field costs what graphql-js costs (docs/performance.md).
 */
export function operationPolicyPlugin(metrics: MetricsService): ApolloServerPlugin<GqlContext> {
  return {
    async requestDidStart(): Promise<GraphQLRequestListener<GqlContext>> {
      const started = performance.now();
      return {
        async didResolveOperation(rc: GraphQLRequestContextDidResolveOperation<GqlContext>) {
          const strict = wantsGraphqlResponseJson(rc.request.http?.headers.get('accept'));
          if (rc.operation?.operation === OperationTypeNode.SUBSCRIPTION) {
            throw subscriptionOverHttp();
          }
          if (!rc.operation) {
            // Apollo answers OPERATION_RESOLUTION_FAILURE, to callers with credentials
            if (!rc.contextValue.caller) {
              throw authenticationRequired(strict ? 401 : 200);
            }
            return;
          }
          // the checks a WebSocket operation passes too (operation-gate.ts)
          const gate = operationGate({
            schema: rc.schema,
            document: rc.document,
            operation: rc.operation,
            operationName: rc.operationName,
            variables: rc.request.variables,
            caller: rc.contextValue.caller,
            source: rc.source,
          });
          // reported as `extensions.cost`, refused as too complex or not
          rc.contextValue.cost = gate.cost;
          if (!gate.passed) {
            throw withStatus(gate.error, strict ? gate.status : 200);
          }
        },

        // introspection-only queries are answered from the per-schema cache (introspection-cache.ts),
        // after the checks above and the rate-limit plugin's charges
        async responseForOperation(
          rc: GraphQLRequestContextResponseForOperation<GqlContext>,
        ): Promise<GraphQLResponse | null> {
          if (!isIntrospectionQuery(rc.document, rc.operation)) {
            return null;
          }
          const result = introspectionResult(
            rc.schema,
            rc.document,
            rc.source,
            rc.operationName,
            rc.request.variables,
          );
          if (result.errors) {
            return null; // not kept: Apollo executes it again and formats its errors
          }
          return {
            http: { status: undefined, headers: new HeaderMap() },
            body: { kind: 'single', singleResult: { data: result.data } },
          };
        },

        async willSendResponse(rc: GraphQLRequestContextWillSendResponse<GqlContext>) {
          applyResponsePolicy(rc);
          // the answer as sent: counted, timed and traced (one plugin for both, graphql-telemetry.ts)
          recordHttpOperation(rc, started, metrics);
        },
      };
    },
  };
}

/**
 * The answer's final shape: over MAX_RESPONSE_BYTES replaced by one error, `extensions.cost`, the
 * status of request errors under application/json, and Cache-Control from the operation's hints.
 */
function applyResponsePolicy(rc: GraphQLRequestContextWillSendResponse<GqlContext>): void {
  const { body, http } = rc.response;
  if (body.kind !== 'single') {
    http.headers.set('cache-control', 'no-store');
    return;
  }
  let result = body.singleResult;
  let strict: boolean | undefined;
  const isStrict = () =>
    (strict ??= wantsGraphqlResponseJson(rc.request.http?.headers.get('accept')));
  if (
    rc.contextValue.responseSize?.exceeded ||
    (result.data && jsonSizeOf(result.data) > MAX_RESPONSE_BYTES)
  ) {
    const error = responseTooLarge(MAX_RESPONSE_BYTES);
    result = body.singleResult = { errors: [formatGraphqlError(error.toJSON(), error)] };
    http.status = isStrict() ? 400 : 200;
  }
  if (rc.contextValue.cost) {
    result.extensions = { ...result.extensions, cost: { ...rc.contextValue.cost } };
  }
  // GraphQL request errors (parse, validation, coercion, cost, auth): 200 under application/json.
  // A malformed request envelope (Apollo's BAD_REQUEST: no query, query not a string...) stays 400.
  if (
    !('data' in result) &&
    http.status === 400 &&
    !rc.errors?.some(isMalformedRequest) &&
    !isStrict()
  ) {
    http.status = 200;
  }
  if (http.status === 401) {
    http.headers.set('www-authenticate', 'Basic realm="atrium", Bearer');
  }
  const policy =
    rc.document && rc.operation?.operation === OperationTypeNode.QUERY && !result.errors?.length
      ? operationCachePolicy(rc.schema, rc.document, rc.operation)
      : null;
  if (!policy) {
    http.headers.set('cache-control', 'no-store');
    return;
  }
  const scope = policy.scope === 'PUBLIC' && !rc.contextValue.caller ? 'public' : 'private';
  http.headers.set('cache-control', `max-age=${policy.maxAge}, ${scope}`);
}
