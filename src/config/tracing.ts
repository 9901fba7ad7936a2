/**
 * Whether traces are exported, read from the standard OpenTelemetry environment before anything else
 * loads (src/telemetry/preload.ts): the SDK itself reads the rest of `OTEL_*` (protocol, sampler,
 * batch delays, resource attributes). docs/operations.md, "Traces".
 */
export interface TracingSettings {
  /** `http/protobuf` (the OTLP default) or `http/json`. */
  protocol: 'http/protobuf' | 'http/json';
  /** `OTEL_SERVICE_NAME`, default `atrium`. */
  serviceName: string;
}

const PROTOCOLS = ['http/protobuf', 'http/json'] as const;

/**
 * The settings when an OTLP endpoint is configured (`OTEL_EXPORTER_OTLP_ENDPOINT` or
 * `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`) and the SDK is not disabled (`OTEL_SDK_DISABLED=true`,
 * `OTEL_TRACES_EXPORTER=none`); undefined otherwise: then nothing of the SDK is loaded.
 * An unsupported protocol (`grpc`) is a configuration error.
 */
export function tracingSettings(
  env: Record<string, string | undefined> = process.env,
): TracingSettings | undefined {
  const endpoint = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT || env.OTEL_EXPORTER_OTLP_ENDPOINT;
  if (!endpoint) {
    return undefined;
  }
  if (env.OTEL_SDK_DISABLED?.trim().toLowerCase() === 'true') {
    return undefined;
  }
  if (env.OTEL_TRACES_EXPORTER?.trim().toLowerCase() === 'none') {
    return undefined;
  }
  const protocol = (
    env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL ||
    env.OTEL_EXPORTER_OTLP_PROTOCOL ||
    'http/protobuf'
  ).trim();
  if (!(PROTOCOLS as readonly string[]).includes(protocol)) {
    throw new Error(
      `OTEL_EXPORTER_OTLP_PROTOCOL must be one of ${PROTOCOLS.join(', ')} (got "${protocol}")`,
    );
  }
  return {
    protocol: protocol as TracingSettings['protocol'],
    serviceName: env.OTEL_SERVICE_NAME?.trim() || 'atrium',
  };
}
