import type { GraphQLRequestContextWillSendResponse } from '@apollo/server';
import type { OperationDefinitionNode } from 'graphql';
import { noteOperation } from '../http/logging.js';
import type { GraphqlOutcome, MetricsService } from '../metrics/metrics.service.js';
import type { GqlContext } from './context.js';
import { recordGraphqlOperation } from '../telemetry/tracing.js';

/** How a result ended (see `GraphqlOutcome`). */
export function outcomeOf(result: { data?: unknown; errors?: readonly unknown[] }): GraphqlOutcome {
  if (!result.errors?.length) {
    return 'ok';
  }
  return result.data ? 'partial' : 'error';
}

/** The operation's type as a label: `query`, `mutation`, `subscription`, or `unknown` (unresolved). */
export function operationType(operation: OperationDefinitionNode | undefined | null): string {
  return operation ? operation.operation : 'unknown';
}

/** The operation's name as written in the document, `anonymous`, or `unknown` (unresolved). */
export function operationName(operation: OperationDefinitionNode | undefined | null): string {
  return operation ? (operation.name?.value ?? 'anonymous') : 'unknown';
}

/**
 * GraphQL over HTTP, per operation, when its answer is sent (operationPolicyPlugin's
 * willSendResponse, after the policy shaped the answer): `atrium_graphql_operations_total`, its
 * duration and cost (docs/operations.md), and the operation's name and type on the request's log
 * line. Requests refused before Apollo starts an operation (invalid credentials, a body over the
 * limits) are only in the HTTP metrics and the request log. With tracing on, a span per operation.
 * Over WebSocket, GraphqlWsServer records the same.
 */
export function recordHttpOperation(
  rc: GraphQLRequestContextWillSendResponse<GqlContext>,
  started: number,
  metrics: MetricsService,
): void {
  const { body } = rc.response;
  const type = operationType(rc.operation);
  const name = operationName(rc.operation);
  const req = rc.contextValue.req;
  if (req) {
    noteOperation(req, name, type);
  }
  const outcome = body.kind === 'single' ? outcomeOf(body.singleResult) : 'ok';
  recordGraphqlOperation(name, type, started, rc.contextValue.cost, outcome !== 'ok');
  metrics.recordOperation(
    'http',
    type,
    name,
    outcome,
    (performance.now() - started) / 1000,
    rc.contextValue.cost?.requested,
  );
}
