// `npm run bench -- --tracing` (bench/README.md, docs/operations.md "Traces"): every app scenario
// runs on an instance exporting its traces (OTLP/protobuf, every request sampled) to a local sink,
// and, interleaved, on an instance of the same build without an OTLP endpoint (the `@compare` rows),
// so the cost of tracing is read from the compare ratio of one run.
import { createServer } from 'node:http';

/**
 * A local OTLP/HTTP receiver that accepts every export (200) and counts requests and bytes: the
 * collector's side of the export without a collector's own cost on the measured CPUs.
 */
export async function startOtlpSink() {
  const counts = { requests: 0, bytes: 0 };
  const server = createServer((req, res) => {
    req.on('data', (chunk) => (counts.bytes += chunk.length));
    req.on('end', () => {
      counts.requests += 1;
      res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end();
    });
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  server.unref();
  const url = `http://127.0.0.1:${server.address().port}`;
  return {
    counts,
    /** The environment of the traced instance. */
    env: {
      OTEL_EXPORTER_OTLP_ENDPOINT: url,
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/protobuf',
      // every request sampled, unless BENCH_OTEL_TRACES_SAMPLER (and _ARG) say otherwise
      OTEL_TRACES_SAMPLER: process.env.BENCH_OTEL_TRACES_SAMPLER ?? 'parentbased_always_on',
      ...(process.env.BENCH_OTEL_TRACES_SAMPLER_ARG
        ? { OTEL_TRACES_SAMPLER_ARG: process.env.BENCH_OTEL_TRACES_SAMPLER_ARG }
        : {}),
    },
    describe: () =>
      `tracing: the app rows export to a local OTLP sink (${counts.requests} exports, ` +
      `${(counts.bytes / 1e6).toFixed(1)} MB received); the @compare rows are the same build ` +
      `without OTEL_EXPORTER_OTLP_ENDPOINT`,
  };
}
