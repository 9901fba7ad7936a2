import type { FastifyInstance } from 'fastify';
import { injectTraceContext, nameServerSpan, tracingEnabled } from './tracing.js';

/**
 * With tracing on, every answer names its server span after the route pattern and carries that
 * span's `traceparent` (and `tracestate`), so a caller can find its request in the traces. Without
 * tracing nothing is registered.
 */
export function registerTraceHeaders(fastify: FastifyInstance): void {
  if (!tracingEnabled()) {
    return;
  }
  fastify.addHook('onSend', (req, reply, payload, done) => {
    nameServerSpan(req.method, req.routeOptions.url);
    const carrier: Record<string, string> = {};
    injectTraceContext(carrier);
    for (const [name, value] of Object.entries(carrier)) {
      void reply.header(name, value);
    }
    done(null, payload);
  });
}
