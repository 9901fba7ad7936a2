import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { gunzipSync } from 'node:zlib';

/** A span as the receiver decoded it (OTLP, either encoding). */
export interface ReceivedSpan {
  service: string;
  traceId: string;
  spanId: string;
  parentSpanId: string;
  name: string;
  /** OTLP SpanKind: 1 internal, 2 server, 3 client. */
  kind: number;
  attributes: Record<string, string | number | boolean>;
  /** OTLP status code: 0 unset, 1 ok, 2 error. */
  status: number;
  links: { traceId: string; spanId: string }[];
}

// ---- protobuf (the wire format of opentelemetry-proto's ExportTraceServiceRequest) ----

interface Field {
  no: number;
  wire: number;
  /** varint / fixed value, or the bytes of a length-delimited field */
  value: bigint | Buffer;
}

/** The top-level fields of one protobuf message. */
function fields(buf: Buffer): Field[] {
  const out: Field[] = [];
  let i = 0;
  const varint = (): bigint => {
    let result = 0n;
    let shift = 0n;
    for (;;) {
      const byte = buf[i++];
      result |= BigInt(byte & 0x7f) << shift;
      if ((byte & 0x80) === 0) {
        return result;
      }
      shift += 7n;
    }
  };
  while (i < buf.length) {
    const tag = Number(varint());
    const no = tag >>> 3;
    const wire = tag & 7;
    if (wire === 0) {
      out.push({ no, wire, value: varint() });
    } else if (wire === 1) {
      out.push({ no, wire, value: buf.readBigUInt64LE(i) });
      i += 8;
    } else if (wire === 2) {
      const len = Number(varint());
      out.push({ no, wire, value: buf.subarray(i, i + len) });
      i += len;
    } else if (wire === 5) {
      out.push({ no, wire, value: BigInt(buf.readUInt32LE(i)) });
      i += 4;
    } else {
      throw new Error(`unsupported protobuf wire type ${wire}`);
    }
  }
  return out;
}

const bytesOf = (f: Field[], no: number): Buffer[] =>
  f.filter((x) => x.no === no).map((x) => x.value as Buffer);
const first = (f: Field[], no: number): Field | undefined => f.find((x) => x.no === no);

/** AnyValue: string 1, bool 2, int 3, double 4. */
function anyValue(buf: Buffer): string | number | boolean {
  const f = fields(buf)[0];
  if (!f) {
    return '';
  }
  switch (f.no) {
    case 1:
      return (f.value as Buffer).toString('utf8');
    case 2:
      return f.value === 1n;
    case 3:
      return Number(BigInt.asIntN(64, f.value as bigint));
    case 4: {
      const b = Buffer.alloc(8);
      b.writeBigUInt64LE(f.value as bigint);
      return b.readDoubleLE(0);
    }
    default:
      return `<AnyValue field ${f.no}>`;
  }
}

/** KeyValue { key 1; value 2 } list. */
function keyValues(list: Buffer[]): Record<string, string | number | boolean> {
  const out: Record<string, string | number | boolean> = {};
  for (const kv of list) {
    const f = fields(kv);
    const key = bytesOf(f, 1)[0]?.toString('utf8') ?? '';
    const value = bytesOf(f, 2)[0];
    out[key] = value ? anyValue(value) : '';
  }
  return out;
}

function decodeProtobuf(body: Buffer): ReceivedSpan[] {
  const spans: ReceivedSpan[] = [];
  for (const resourceSpans of bytesOf(fields(body), 1)) {
    const rs = fields(resourceSpans);
    const resource = bytesOf(rs, 1)[0];
    const service = String(
      resource ? (keyValues(bytesOf(fields(resource), 1))['service.name'] ?? '') : '',
    );
    for (const scopeSpans of bytesOf(rs, 2)) {
      for (const spanBytes of bytesOf(fields(scopeSpans), 2)) {
        const s = fields(spanBytes);
        const status = bytesOf(s, 15)[0];
        const code = status ? first(fields(status), 3) : undefined;
        spans.push({
          service,
          traceId: bytesOf(s, 1)[0]?.toString('hex') ?? '',
          spanId: bytesOf(s, 2)[0]?.toString('hex') ?? '',
          parentSpanId: bytesOf(s, 4)[0]?.toString('hex') ?? '',
          name: bytesOf(s, 5)[0]?.toString('utf8') ?? '',
          kind: Number((first(s, 6)?.value as bigint | undefined) ?? 0n),
          attributes: keyValues(bytesOf(s, 9)),
          status: Number((code?.value as bigint | undefined) ?? 0n),
          links: bytesOf(s, 13).map((link) => {
            const l = fields(link);
            return {
              traceId: bytesOf(l, 1)[0]?.toString('hex') ?? '',
              spanId: bytesOf(l, 2)[0]?.toString('hex') ?? '',
            };
          }),
        });
      }
    }
  }
  return spans;
}

// ---- OTLP/JSON ----

interface JsonKeyValue {
  key: string;
  value: Record<string, unknown>;
}

function jsonAttributes(
  list: JsonKeyValue[] | undefined,
): Record<string, string | number | boolean> {
  const out: Record<string, string | number | boolean> = {};
  for (const { key, value } of list ?? []) {
    const v =
      value.stringValue ?? value.boolValue ?? value.intValue ?? value.doubleValue ?? undefined;
    out[key] = typeof v === 'string' && value.intValue !== undefined ? Number(v) : (v as never);
  }
  return out;
}

function decodeJson(body: Buffer): ReceivedSpan[] {
  const request = JSON.parse(body.toString('utf8')) as {
    resourceSpans: {
      resource?: { attributes?: JsonKeyValue[] };
      scopeSpans: {
        spans: {
          traceId: string;
          spanId: string;
          parentSpanId?: string;
          name: string;
          kind: number;
          attributes?: JsonKeyValue[];
          status?: { code?: number };
          links?: { traceId: string; spanId: string }[];
        }[];
      }[];
    }[];
  };
  const spans: ReceivedSpan[] = [];
  for (const rs of request.resourceSpans) {
    const service = String(jsonAttributes(rs.resource?.attributes)['service.name'] ?? '');
    for (const ss of rs.scopeSpans) {
      for (const s of ss.spans) {
        spans.push({
          service,
          traceId: s.traceId,
          spanId: s.spanId,
          parentSpanId: s.parentSpanId ?? '',
          name: s.name,
          kind: s.kind,
          attributes: jsonAttributes(s.attributes),
          status: s.status?.code ?? 0,
          links: (s.links ?? []).map((l) => ({ traceId: l.traceId, spanId: l.spanId })),
        });
      }
    }
  }
  return spans;
}

/**
 * A real OTLP/HTTP trace receiver on loopback (`POST /v1/traces`): it decodes what an exporter sends,
 * `application/json` (OTLP/JSON) or `application/x-protobuf` (the protobuf wire format, decoded here
 * field by field), gzip or not, and keeps every span with the encoding it came in.
 */
export class OtlpReceiver {
  readonly spans: (ReceivedSpan & { encoding: 'json' | 'protobuf' })[] = [];
  private server!: Server;

  async start(): Promise<this> {
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        let body = Buffer.concat(chunks);
        if (req.headers['content-encoding'] === 'gzip') {
          body = gunzipSync(body);
        }
        const type = req.headers['content-type'] ?? '';
        if (req.method !== 'POST' || req.url !== '/v1/traces') {
          res.writeHead(404).end();
          return;
        }
        const json = type.startsWith('application/json');
        const decoded = json ? decodeJson(body) : decodeProtobuf(body);
        const encoding = json ? ('json' as const) : ('protobuf' as const);
        this.spans.push(...decoded.map((s) => ({ ...s, encoding })));
        res.writeHead(200, {
          'content-type': json ? 'application/json' : 'application/x-protobuf',
        });
        res.end(json ? '{}' : '');
      });
    });
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    return this;
  }

  get url(): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  trace(traceId: string): ReceivedSpan[] {
    return this.spans.filter((s) => s.traceId === traceId);
  }

  /** The spans below `span` in its trace, at any depth. */
  descendants(span: ReceivedSpan): ReceivedSpan[] {
    const inTrace = this.trace(span.traceId);
    const below: ReceivedSpan[] = [];
    let frontier = [span.spanId];
    while (frontier.length > 0) {
      const next = inTrace.filter((s) => frontier.includes(s.parentSpanId));
      below.push(...next);
      frontier = next.map((s) => s.spanId);
    }
    return below;
  }

  close(): Promise<void> {
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}
