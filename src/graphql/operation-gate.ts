import {
  GraphQLError,
  OperationTypeNode,
  type DocumentNode,
  type GraphQLSchema,
  type OperationDefinitionNode,
} from 'graphql';
import type { Caller } from '../identity/caller.js';
import { operationScopeRefusal } from './directives/auth.directive.js';
import {
  cachedIntrospectionCost,
  MAX_QUERY_COST,
  MAX_SUBSCRIPTION_COST,
  operationCost,
  tooComplex,
} from './cost.js';
import { introspectionCached, isIntrospectionQuery } from './introspection-cache.js';
import { authenticationRequired, isIntrospectionOnly } from './operation-rules.js';

/** One GraphQL operation, parsed and validated, with who sends it. */
export interface GateOperation {
  schema: GraphQLSchema;
  document: DocumentNode;
  operation: OperationDefinitionNode;
  operationName: string | null | undefined;
  variables: Record<string, unknown> | null | undefined;
  caller: Caller | undefined;
  /** The document's text: the key of the introspection cache. */
  source: string;
}

/** An operation the gate let through, with its cost and the limit it was held to. */
export interface GatePassed {
  passed: true;
  cost: { requested: number; limit: number };
}

/**
 * An operation the gate refused, with the HTTP status a GraphQL-over-HTTP response under
 * `application/graphql-response+json` carries for it (a WebSocket sends the error alone).
 */
export interface GateRefused {
  passed: false;
  error: GraphQLError;
  status: 400 | 401 | 403;
  /** The cost and its limit, when the cost was computed (refused as too complex). */
  cost?: { requested: number; limit: number };
}

/**
 * The checks every GraphQL operation passes before it runs, whichever transport brought it (the
 * HTTP plugin in graphql.plugins.ts and the WebSocket server in graphql-ws.server.ts both call this):
 *
 * 1. credentials: anonymous callers only introspect (UNAUTHENTICATED);
 * 2. scopes: a partner app's operation selecting anything outside its token's scopes is refused as a
 *    whole (FORBIDDEN with `requiredScopes`, auth.directive.ts);
 * 3. cost: computed from the document and the variables (BAD_USER_INPUT when the variables do not
 *    coerce) and held to MAX_QUERY_COST, or MAX_SUBSCRIPTION_COST for a subscription, which is
 *    charged again for every event (QUERY_TOO_COMPLEX). An introspection-only query whose answer is
 *    already cached is held to the limit at its full cost but costs `cachedIntrospectionCost`.
 *
 * Rate limits (the identity's request bucket and cost budget) come after, charged by each transport
 * with the cost returned here.
 */
export function operationGate(op: GateOperation): GatePassed | GateRefused {
  if (!op.caller && !isIntrospectionOnly(op.document, op.operation)) {
    return { passed: false, error: authenticationRequired(), status: 401 };
  }
  const refusal = operationScopeRefusal(
    op.schema,
    op.document,
    op.operation,
    op.variables,
    op.caller,
  );
  if (refusal) {
    return { passed: false, error: refusal, status: 403 };
  }
  let requested: number;
  try {
    requested = operationCost(op.schema, op.document, op.variables ?? undefined, op.operationName);
  } catch (err) {
    // variables that do not coerce (the cost needs their values): execution would say the same
    return { passed: false, error: invalidVariables(err), status: 400 };
  }
  const limit =
    op.operation.operation === OperationTypeNode.SUBSCRIPTION
      ? MAX_SUBSCRIPTION_COST
      : MAX_QUERY_COST;
  if (requested > limit) {
    return {
      passed: false,
      error: tooComplex(requested, limit),
      status: 400,
      cost: { requested, limit },
    };
  }
  if (
    isIntrospectionQuery(op.document, op.operation) &&
    introspectionCached(op.schema, op.source, op.operationName, op.variables)
  ) {
    requested = cachedIntrospectionCost(requested);
  }
  return { passed: true, cost: { requested, limit } };
}

function invalidVariables(err: unknown): GraphQLError {
  return new GraphQLError(err instanceof Error ? err.message : 'Invalid variables', {
    nodes: err instanceof GraphQLError ? err.nodes : undefined,
    extensions: { code: 'BAD_USER_INPUT' },
  });
}
