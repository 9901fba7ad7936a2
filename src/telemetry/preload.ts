import { createRequire } from 'node:module';
import type * as SdkNode from '@opentelemetry/sdk-node';
import type * as HttpExporter from '@opentelemetry/exporter-trace-otlp-http';
import type * as ProtoExporter from '@opentelemetry/exporter-trace-otlp-proto';
import type * as PgInstrumentation from '@opentelemetry/instrumentation-pg';
import type * as IORedisInstrumentation from '@opentelemetry/instrumentation-ioredis';
import { tracingSettings, type TracingSettings } from '../config/tracing.js';
import { markTracingStarted } from './tracing.js';

/**
 * Starts the OpenTelemetry SDK when an OTLP endpoint is configured (docs/operations.md, "Traces").
 * It must run before the instrumented libraries load (the instrumentations patch them as they are
 * required): `src/main.ts` imports this module first, and `node --import ./dist/telemetry/preload.js`
 * works as well. Without an endpoint nothing of the SDK is even loaded: the packages are required
 * here, on demand, not imported.
 */
const require = createRequire(import.meta.url);

function startSdk(settings: TracingSettings): void {
  const { NodeSDK } = require('@opentelemetry/sdk-node') as typeof SdkNode;
  const { PgInstrumentation: Pg } =
    require('@opentelemetry/instrumentation-pg') as typeof PgInstrumentation;
  const { IORedisInstrumentation: IORedis } =
    require('@opentelemetry/instrumentation-ioredis') as typeof IORedisInstrumentation;
  const traceExporter =
    settings.protocol === 'http/json'
      ? new (
          require('@opentelemetry/exporter-trace-otlp-http') as typeof HttpExporter
        ).OTLPTraceExporter()
      : new (
          require('@opentelemetry/exporter-trace-otlp-proto') as typeof ProtoExporter
        ).OTLPTraceExporter();
  const sdk = new NodeSDK({
    serviceName: settings.serviceName,
    traceExporter,
    // traces only: metrics stay with Prometheus (/metrics), logs with pino on stdout
    metricReaders: [],
    logRecordProcessors: [],
    // the request's server span is made by Fastify hooks (src/telemetry/http-trace.ts), not by
    // @opentelemetry/instrumentation-http, whose wrapping of every request and response cost more
    // than the rest of tracing together (docs/operations.md, "What it costs")
    instrumentations: [
      // statement text with its $n placeholders; values are never recorded
      // inside a trace only, as the SQLite spans: the background loops' statements are left out
      new Pg({ enhancedDatabaseReporting: false, requireParentSpan: true }),
      // the command, not its arguments (keys and payloads are data)
      new IORedis({ dbStatementSerializer: (command) => command, requireParentSpan: true }),
    ],
  });
  sdk.start();
  markTracingStarted();
  const stop = () => {
    void sdk.shutdown();
  };
  process.once('beforeExit', stop);
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
}

let settings: TracingSettings | undefined;
try {
  settings = tracingSettings();
} catch (err) {
  console.error((err as Error).message); // one clear line naming the variable, as config errors
  process.exit(1);
}
if (settings !== undefined) {
  startSdk(settings);
}
