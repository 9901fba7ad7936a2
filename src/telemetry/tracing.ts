import {
  context,
  propagation,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  trace,
  type Attributes,
  type Context,
  type Link,
  type Span,
  type TimeInput,
  type Tracer,
} from '@opentelemetry/api';

/**
 * The application's side of tracing (docs/operations.md, "Traces"). Everything here is a no-op
 * returning undefined until src/telemetry/preload.ts started the SDK (an OTLP endpoint is set):
 * callers test the result, so without an endpoint no span object is made on any path.
 */
let enabled = false;

/** Called once by the preload, after the SDK started. */
export function markTracingStarted(): void {
  enabled = true;
}

export function tracingEnabled(): boolean {
  return enabled;
}

const TRACER = 'atrium';

let cachedTracer: Tracer | undefined;

/** The application's tracer, looked up once (after the SDK started: nothing calls it before). */
function tracer(): Tracer {
  return (cachedTracer ??= trace.getTracer(TRACER));
}

/** The trace and span of the active span, as log fields; undefined outside a trace. */
export function traceLogFields(): { trace_id: string; span_id: string } | undefined {
  const span = trace.getActiveSpan();
  if (span === undefined) {
    return undefined;
  }
  const { traceId, spanId } = span.spanContext();
  return { trace_id: traceId, span_id: spanId };
}

/** W3C `traceparent` (and `tracestate`) of `span`, else of the active span, written into `carrier`. */
export function injectTraceContext(carrier: Record<string, string>, span?: Span): void {
  if (enabled) {
    propagation.inject(span ? trace.setSpan(ROOT_CONTEXT, span) : context.active(), carrier);
  }
}

/** The active span's `traceparent`, kept with work done later (a webhook event's deliveries). */
export function activeTraceparent(): string | null {
  if (!enabled || trace.getActiveSpan() === undefined) {
    return null;
  }
  const carrier: Record<string, string> = {};
  propagation.inject(context.active(), carrier);
  return carrier.traceparent ?? null;
}

/** The context a stored `traceparent` names (a root context when there is none). */
function contextOf(traceparent: string | null | undefined): Context {
  return traceparent ? propagation.extract(ROOT_CONTEXT, { traceparent }) : ROOT_CONTEXT;
}

/** A link to the span a stored `traceparent` names, when it is valid. */
function linkTo(traceparent: string | null | undefined): Link | undefined {
  const spanContext = trace.getSpanContext(contextOf(traceparent));
  return spanContext ? { context: spanContext } : undefined;
}

/** Reads a request's `traceparent`/`tracestate` (Node's headers: lower-case names, a string each). */
const HEADERS_GETTER = {
  get: (headers: Record<string, string | string[] | undefined>, key: string) => headers[key],
  keys: (headers: Record<string, string | string[] | undefined>) => Object.keys(headers),
};

/**
 * The server span of an HTTP request (src/telemetry/http-trace.ts), a child of the caller's
 * `traceparent` when it sends one, named `METHOD` until its route is known. The attributes are
 * OpenTelemetry's HTTP server conventions; the path is kept without its query string, which may
 * carry credentials (`api_key`).
 */
export function startServerSpan(
  method: string,
  url: string,
  scheme: string,
  headers: Record<string, string | string[] | undefined>,
): Span {
  const parent =
    headers.traceparent === undefined
      ? ROOT_CONTEXT
      : propagation.extract(ROOT_CONTEXT, headers, HEADERS_GETTER);
  const query = url.indexOf('?');
  return tracer().startSpan(
    method,
    {
      kind: SpanKind.SERVER,
      attributes: {
        'http.request.method': method,
        'url.path': query < 0 ? url : url.slice(0, query),
        'url.scheme': scheme,
      },
    },
    parent,
  );
}

/** Ends a server span with its status code (undefined: the client went away first). */
export function endServerSpan(span: Span, statusCode: number | undefined): void {
  if (statusCode === undefined) {
    span.setStatus({ code: SpanStatusCode.ERROR, message: 'request aborted' });
  } else {
    span.setAttribute('http.response.status_code', statusCode);
    if (statusCode >= 500) {
      span.setStatus({ code: SpanStatusCode.ERROR });
    }
  }
  span.end();
}

/** Runs `work` with `span` active (its SQL statements, log lines and outgoing calls belong to it). */
export function inSpan(span: Span, work: () => void): void {
  context.with(trace.setSpan(ROOT_CONTEXT, span), work);
}

const SQL_VERB = /^\s*([A-Za-z]+)/;

/** Span name and operation by statement text (the hot statements are a few hundred texts). */
const SQL_NAMES = new Map<string, { name: string; operation: string }>();

/**
 * A span for one SQLite statement run by the application's database door (PostgreSQL's come from
 * the `pg` instrumentation): the statement text with its `?` placeholders, never the values. Made
 * only inside a trace (a request, a webhook fan-out or attempt).
 */
export function startSqliteSpan(sql: string): Span | undefined {
  // only inside a trace: the background loops (outbox polling, purges) would each start one; and
  // only when that trace is recorded: the child of a request the sampler left out would be left
  // out too (the samplers are parent-based), so it is not made at all
  if (!enabled || trace.getActiveSpan()?.isRecording() !== true) {
    return undefined;
  }
  let named = SQL_NAMES.get(sql);
  if (named === undefined) {
    const operation = (SQL_VERB.exec(sql)?.[1] ?? 'SQL').toUpperCase();
    named = { name: `${operation} sqlite`, operation };
    if (SQL_NAMES.size < 1000) {
      SQL_NAMES.set(sql, named);
    }
  }
  return tracer().startSpan(named.name, {
    kind: SpanKind.CLIENT,
    attributes: {
      'db.system.name': 'sqlite',
      'db.operation.name': named.operation,
      'db.query.text': sql,
    },
  });
}

/** Marks a span failed (an attempt the receiver did not accept). */
export function markSpanFailed(span: Span | undefined, message: string): void {
  span?.setStatus({ code: SpanStatusCode.ERROR, message });
}

/** Ends a statement's span, marked failed when it threw. */
export function endSqlSpan(span: Span | undefined, error?: unknown): void {
  if (span === undefined) {
    return;
  }
  if (error !== undefined) {
    span.setStatus({ code: SpanStatusCode.ERROR, message: (error as Error).message });
  }
  span.end();
}

/**
 * One span for a GraphQL operation, written when its answer is sent (started when the request
 * began): `graphql.operation.name`, `graphql.operation.type` and the computed cost.
 */
export function recordGraphqlOperation(
  name: string,
  type: string,
  started: TimeInput,
  cost: { requested: number; limit: number } | undefined,
  failed: boolean,
): void {
  if (!enabled || trace.getActiveSpan()?.isRecording() !== true) {
    return;
  }
  const span = tracer().startSpan(`${type} ${name}`, {
    kind: SpanKind.INTERNAL,
    startTime: started,
    attributes: {
      'graphql.operation.name': name,
      'graphql.operation.type': type,
      ...(cost
        ? {
            'atrium.graphql.cost.requested': cost.requested,
            'atrium.graphql.cost.limit': cost.limit,
          }
        : {}),
    },
  });
  if (failed) {
    span.setStatus({ code: SpanStatusCode.ERROR });
  }
  span.end();
}

/**
 * A span written once its work is over (a WebSocket upgrade, an operation over WebSocket), in the
 * trace a `traceparent` names (a new trace without one). Returns its own `traceparent`, so that
 * later work can continue the trace (an operation, the upgrade of its socket).
 */
export function recordSpan(
  name: string,
  kind: 'server' | 'internal',
  parent: string | null | undefined,
  started: TimeInput,
  attributes: Attributes,
  failed: boolean,
): string | null {
  if (!enabled) {
    return null;
  }
  const parentContext = contextOf(parent);
  const span = tracer().startSpan(
    name,
    {
      kind: kind === 'server' ? SpanKind.SERVER : SpanKind.INTERNAL,
      startTime: started,
      attributes,
    },
    parentContext,
  );
  if (failed) {
    span.setStatus({ code: SpanStatusCode.ERROR });
  }
  span.end();
  const carrier: Record<string, string> = {};
  propagation.inject(trace.setSpan(parentContext, span), carrier);
  return carrier.traceparent ?? null;
}

/**
 * Runs `work` in a span whose parent is the span a stored `traceparent` names (the change that
 * produced a webhook event), or, for a batch of several traces, in a new trace linked to each.
 */
export async function inStoredTrace<T>(
  name: string,
  kind: 'client' | 'internal',
  traceparents: readonly (string | null)[],
  attributes: Attributes,
  work: (span: Span | undefined) => Promise<T>,
): Promise<T> {
  if (!enabled) {
    return work(undefined);
  }
  const distinct = [...new Set(traceparents.filter((t): t is string => t !== null))];
  const traces = new Set(distinct.map((t) => t.split('-')[1]));
  const parent = traces.size === 1 ? contextOf(distinct[0]) : ROOT_CONTEXT;
  const links = traces.size > 1 ? distinct.map(linkTo).filter((l) => l !== undefined) : [];
  const span = tracer().startSpan(
    name,
    { kind: kind === 'client' ? SpanKind.CLIENT : SpanKind.INTERNAL, attributes, links },
    parent,
  );
  try {
    return await context.with(trace.setSpan(parent, span), () => work(span));
  } catch (err) {
    span.setStatus({ code: SpanStatusCode.ERROR, message: (err as Error).message });
    throw err;
  } finally {
    span.end();
  }
}
