import type { Span } from '@opentelemetry/api';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { routeUrl } from '../common/route-url.js';
import {
  endServerSpan,
  injectTraceContext,
  inSpan,
  startServerSpan,
  tracingEnabled,
} from './tracing.js';

/** Requests the server span would only add noise to: probes and the metrics scrape. */
const UNTRACED = /^\/(health\/|metrics(\?|$))/;

const SPAN = Symbol('serverSpan');

type TracedRequest = FastifyRequest & { [SPAN]: Span | undefined };

/**
 * With tracing on, every request (but the probes and the metrics scrape) gets one server span, made
 * by these Fastify hooks rather than by the HTTP instrumentation (docs/operations.md, "Traces"): it
 * continues the caller's `traceparent`, is named after the route pattern (`GET /api/v1/users/:id`,
 * `http.route`), and every answer carries its `traceparent` (and `tracestate`), so a caller can find
 * its request. The request's work runs in the span's context: from `onRequest`, and again from
 * `preValidation`, because a body is read in the socket's callbacks, outside it. The completion log
 * line is written in it too (`onResponse`). Without tracing nothing is registered.
 */
export function registerTraceHeaders(fastify: FastifyInstance): void {
  if (!tracingEnabled()) {
    return;
  }
  fastify.decorateRequest(SPAN, undefined);
  fastify.addHook('onRequest', (req, _reply, done) => {
    if (UNTRACED.test(req.url)) {
      done();
      return;
    }
    const span = startServerSpan(req.method, req.url, req.protocol, req.headers);
    (req as TracedRequest)[SPAN] = span;
    inRecordedSpan(span, done);
  });
  fastify.addHook('preValidation', (req, _reply, done) => {
    inRecordedSpan((req as TracedRequest)[SPAN], done);
  });
  fastify.addHook('onSend', (req, reply, payload, done) => {
    const span = (req as TracedRequest)[SPAN];
    if (span !== undefined) {
      const route = routeUrl(req);
      if (route !== undefined) {
        span.setAttribute('http.route', route);
        span.updateName(`${req.method} ${route}`);
      }
      const carrier: Record<string, string> = {};
      injectTraceContext(carrier, span);
      for (const name in carrier) {
        void reply.header(name, carrier[name]);
      }
    }
    done(null, payload);
  });
  fastify.addHook('onResponse', (req, reply, done) => {
    const span = (req as TracedRequest)[SPAN];
    if (span === undefined) {
      done();
      return;
    }
    (req as TracedRequest)[SPAN] = undefined;
    endServerSpan(span, reply.statusCode);
    // the completion log line (written after the onResponse hooks) names the span
    inRecordedSpan(span, done);
  });
  fastify.addHook('onRequestAbort', (req, done) => {
    const span = (req as TracedRequest)[SPAN];
    if (span !== undefined) {
      (req as TracedRequest)[SPAN] = undefined;
      endServerSpan(span, undefined);
    }
    done();
  });
}

/**
 * Runs the rest of the request in the span's context when the span is recorded. A request the
 * sampler left out runs outside any: nothing below it would be recorded either (the samplers are
 * parent-based), and entering a context costs on every request.
 */
function inRecordedSpan(span: Span | undefined, done: () => void): void {
  if (span?.isRecording()) {
    inSpan(span, done);
  } else {
    done();
  }
}

/** The trace id of a request's span, recorded or not (the error envelope's `trace_id`). */
export function requestTraceId(req: FastifyRequest): string | undefined {
  return (req as TracedRequest)[SPAN]?.spanContext().traceId;
}
