import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { FastifyBaseLogger } from 'fastify';
import type { OperationDefinitionNode } from 'graphql';
import type { MaybeCaller } from '../identity/caller.js';
import { callerFields } from '../http/logging.js';
import type { MetricsService } from '../metrics/metrics.service.js';
import { CLOSE_TOO_MANY_CONNECTIONS } from '../rate-limit/socket-limits.service.js';
import { CLOSE_CREDENTIALS_LAPSED } from './current-rights.js';
import { operationName, operationType, outcomeOf } from './graphql-telemetry.js';
import { recordSpan } from '../telemetry/tracing.js';

/** Close codes that are security events (logged at warn): refused credentials, too many. */
const SECURITY_CLOSE_CODES = new Set([CLOSE_CREDENTIALS_LAPSED, CLOSE_TOO_MANY_CONNECTIONS]);
const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;
const MAX_LOGGED_NAME = 100;

/** One operation on a socket, from `subscribe` to `complete` (metrics and log lines). */
export interface WsOperation {
  id: string;
  name: string;
  type: string;
  started: number;
  cost?: number;
  outcome: 'ok' | 'partial' | 'error';
  /** The error code that ended it (RATE_LIMITED makes its line a warning). */
  code?: unknown;
  /** A subscription that is running (counted in atrium_graphql_subscriptions_active). */
  active: boolean;
  /** The trace it continues: `extensions.traceparent` of its `subscribe` message, else the socket's. */
  traceparent?: string | null;
}

/** What telemetry keeps on graphql-ws's per-socket `extra`. */
export type SocketTelemetry = {
  request: IncomingMessage;
  /** The socket's logger: connection id, client address and (once known) the caller. */
  log?: FastifyBaseLogger;
  opened?: number;
  operations?: Map<string, WsOperation>;
  /** With tracing on: the upgrade's span (in the trace of the upgrade request's `traceparent`). */
  traceparent?: string | null;
};

/** The first error code of a list of errors. */
function errorCode(errors: readonly unknown[] | undefined): unknown {
  return (errors?.[0] as { extensions?: Record<string, unknown> } | undefined)?.extensions?.code;
}

/**
 * Metrics and log lines of GraphQL over WebSocket (docs/operations.md): connect, close (with its
 * code; 4403 and 4429 at warn), each operation's start and end, and the operation metrics HTTP
 * records through recordHttpOperation (graphql-telemetry.ts). Subscriptions are counted and timed when they have
 * subscribed (their lifetime is not a latency), and gauged while they run.
 */
export class WsTelemetry {
  constructor(
    private readonly metrics: MetricsService,
    private readonly rootLog: () => FastifyBaseLogger,
    private readonly clientAddress: (request: IncomingMessage) => string,
  ) {}

  /** The socket's logger, made once per connection (child of the application's logger). */
  log(extra: SocketTelemetry): FastifyBaseLogger {
    if (!extra.log) {
      const header = extra.request.headers['x-request-id'];
      const id = typeof header === 'string' && REQUEST_ID.test(header) ? header : randomUUID();
      extra.log = this.rootLog().child({
        connection_id: id,
        address: this.clientAddress(extra.request),
      });
      extra.opened = performance.now();
    }
    return extra.log;
  }

  /** The credentials are accepted: the socket's lines name the caller from now on. */
  identified(extra: SocketTelemetry, caller: MaybeCaller): void {
    if (caller) {
      extra.log = this.log(extra).child(callerFields(caller));
    }
  }

  /** The connection is acknowledged. */
  connected(extra: SocketTelemetry): void {
    extra.operations = new Map();
    // the upgrade, in the trace of its `traceparent` header: the socket's operations continue it
    const header = extra.request.headers.traceparent;
    extra.traceparent = recordSpan(
      'GET /graphql (websocket)',
      'server',
      typeof header === 'string' ? header : undefined,
      extra.opened ?? performance.now(),
      {
        'http.route': '/graphql',
        'http.request.method': 'GET',
        'network.protocol.name': 'websocket',
      },
      false,
    );
    this.log(extra).info({ event: 'ws_connected' }, 'websocket connected');
  }

  closed(extra: SocketTelemetry, code: number | undefined, reason: string | undefined): void {
    const fields = {
      event: 'ws_closed',
      code,
      reason: reason || undefined,
      duration_ms: Math.round(performance.now() - (extra.opened ?? performance.now())),
    };
    if (code !== undefined && SECURITY_CLOSE_CODES.has(code)) {
      this.log(extra).warn(fields, 'websocket closed: credentials refused or too many');
    } else {
      this.log(extra).info(fields, 'websocket closed');
    }
  }

  /** A `subscribe` message arrived. */
  started(extra: SocketTelemetry, id: string, traceparent?: unknown): WsOperation {
    const op: WsOperation = {
      id,
      name: 'unknown',
      type: 'unknown',
      started: performance.now(),
      outcome: 'ok',
      active: false,
      traceparent: typeof traceparent === 'string' ? traceparent : extra.traceparent,
    };
    extra.operations?.set(id, op);
    return op;
  }

  /** The operation's document is known. */
  resolved(op: WsOperation, operation: OperationDefinitionNode, cost?: number): void {
    op.name = operationName(operation);
    op.type = operationType(operation);
    op.cost = cost;
  }

  /** The checks passed: it runs now. */
  accepted(extra: SocketTelemetry, op: WsOperation): void {
    extra.log?.info(
      {
        event: 'ws_subscribe',
        operation_id: op.id,
        operation_name: op.name.slice(0, MAX_LOGGED_NAME),
        operation_type: op.type,
      },
      'websocket operation started',
    );
  }

  /** The checks refused it: `errors` are sent and the operation ends. */
  refused(extra: SocketTelemetry, op: WsOperation, errors: readonly unknown[]): void {
    op.outcome = 'error';
    op.code = errorCode(errors);
    this.count(op);
    this.finish(extra, op);
  }

  /** A subscription has subscribed (`ok`) or failed to (an error result instead of a stream). */
  subscribed(op: WsOperation, ok: boolean): void {
    op.outcome = ok ? 'ok' : 'error';
    this.count(op);
    if (ok) {
      op.active = true;
      this.metrics.subscriptionsActive.inc();
    }
  }

  /** A result is sent (a query's or mutation's one, or a subscription event). */
  next(
    extra: SocketTelemetry,
    id: string,
    result: { data?: unknown; errors?: readonly unknown[] },
  ) {
    const op = extra.operations?.get(id);
    if (!op) {
      return;
    }
    if (op.type !== 'subscription') {
      op.outcome = outcomeOf(result);
    }
    op.code ??= errorCode(result.errors);
  }

  /** Errors are sent instead of a result. */
  failed(extra: SocketTelemetry, id: string, errors: readonly unknown[]): void {
    const op = extra.operations?.get(id);
    if (op) {
      op.outcome = 'error';
      op.code ??= errorCode(errors);
    }
  }

  /** graphql-ws completed the operation (by the client, the server, or the socket closing). */
  completed(extra: SocketTelemetry, id: string): void {
    const op = extra.operations?.get(id);
    if (!op) {
      return;
    }
    if (op.type !== 'subscription') {
      this.count(op);
    }
    this.finish(extra, op);
  }

  private count(op: WsOperation): void {
    this.metrics.recordOperation(
      'ws',
      op.type,
      op.name,
      op.outcome,
      (performance.now() - op.started) / 1000,
      op.cost,
    );
  }

  /** The operation's end: the active gauge, and its log line (a rate limit's at warn). */
  private finish(extra: SocketTelemetry, op: WsOperation): void {
    extra.operations?.delete(op.id);
    recordSpan(
      `${op.type} ${op.name}`,
      'server',
      op.traceparent,
      op.started,
      {
        'graphql.operation.name': op.name,
        'graphql.operation.type': op.type,
        'atrium.graphql.transport': 'ws',
        ...(op.cost === undefined ? {} : { 'atrium.graphql.cost.requested': op.cost }),
      },
      op.outcome !== 'ok',
    );
    if (op.active) {
      op.active = false;
      this.metrics.subscriptionsActive.dec();
    }
    const fields = {
      event: 'ws_complete',
      operation_id: op.id,
      operation_name: op.name.slice(0, MAX_LOGGED_NAME),
      operation_type: op.type,
      outcome: op.outcome,
      code: op.code,
      duration_ms: Math.round(performance.now() - op.started),
    };
    if (op.code === 'RATE_LIMITED') {
      extra.log?.warn({ ...fields, event: 'rate_limited' }, 'websocket operation rate limited');
    } else {
      extra.log?.info(fields, 'websocket operation complete');
    }
  }
}
