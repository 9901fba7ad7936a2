import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createClient } from 'graphql-ws';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import {
  freshDatabaseUrl,
  startApp,
  usingPostgres,
  usingRedis,
  type TestApp,
} from './helpers/app.js';
import { serviceBuild } from './helpers/build.js';
import { client, type Client } from './helpers/http.js';
import { freePort } from './helpers/rate-limit.js';
import { OtlpReceiver, type ReceivedSpan } from './helpers/otlp-receiver.js';
import { waitFor } from './helpers/wait.js';
import { WebhookReceiver } from './helpers/webhook-receiver.js';

/**
 * Traces end to end (docs/operations.md, "Traces"): the built service runs as a process (the SDK
 * patches libraries as they load) exporting to a real OTLP receiver in this file, which decodes
 * what the exporters send: instance A over OTLP/JSON, instance B over OTLP/protobuf. Both share one
 * database (and Redis when REDIS_URL is set).
 */
const ROOT = new URL('..', import.meta.url).pathname;
const ADMIN = { email: 'trace-admin@example.com', password: 'trace-admin-password-1' };
const SERVER = 2;
const CLIENT = 3;

interface Instance {
  base: string;
  child: ChildProcess;
  stdout: () => string;
  exited: Promise<unknown>;
}

async function startInstance(mainJs: string, env: Record<string, string>): Promise<Instance> {
  const port = await freePort();
  const child = spawn(process.execPath, [mainJs], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', NODE_ENV: 'test', PORT: String(port), ...env },
  });
  let out = '';
  let err = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (err += d.toString()));
  const exited = new Promise((resolve) => child.on('exit', resolve));
  const base = `http://127.0.0.1:${port}`;
  await waitFor(
    async () => {
      if (child.exitCode !== null) {
        throw new Error(`the instance exited:\n${out}\n${err}`);
      }
      return (await fetch(`${base}/health/ready`).catch(() => undefined))?.status === 200;
    },
    { timeoutMs: 40_000, intervalMs: 100, what: () => `the instance to be ready:\n${out}\n${err}` },
  );
  return { base, child, stdout: () => out, exited };
}

/** A W3C trace context of the caller: a new trace id and the caller's span. */
function callerContext(): { traceId: string; parentId: string; traceparent: string } {
  const traceId = randomBytes(16).toString('hex');
  const parentId = randomBytes(8).toString('hex');
  return { traceId, parentId, traceparent: `00-${traceId}-${parentId}-01` };
}

/** The JSON log lines of an instance. */
function logLines(instance: Instance): Record<string, any>[] {
  return instance
    .stdout()
    .trim()
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as Record<string, any>);
}

describe('OpenTelemetry traces of the running service', () => {
  const otlp = new OtlpReceiver();
  const hooks = new WebhookReceiver();
  let dir: string;
  let a: Instance;
  let b: Instance;
  let admin: Client;
  let adminB: Client;
  let token: string;

  beforeAll(async () => {
    const mainJs = join(serviceBuild(), 'main.js');
    await otlp.start();
    await hooks.start();
    dir = mkdtempSync(join(tmpdir(), 'atrium-tracing-'));
    const key = generateKeyPairSync('rsa', { modulusLength: 2048 })
      .privateKey.export({ type: 'pkcs8', format: 'pem' })
      .toString();
    const shared: Record<string, string> = {
      DATA_DIR: dir,
      DATABASE_URL: usingPostgres ? freshDatabaseUrl() : `sqlite:${join(dir, 'traced.sqlite')}`,
      ...(usingRedis
        ? {
            REDIS_URL: process.env.REDIS_URL!,
            REDIS_PREFIX: `atrium-test:${randomBytes(4).toString('hex')}:`,
          }
        : {}),
      // one issuer for both: a token from A is good on B
      PUBLIC_URL: 'http://atrium.test',
      ADMIN_EMAIL: ADMIN.email,
      ADMIN_PASSWORD: ADMIN.password,
      JWT_PRIVATE_KEY: key,
      PASSWORD_HASH_PROFILE: 'test',
      LOG_LEVEL: 'info',
      RATE_LIMIT: '1000000',
      WEBHOOK_ALLOWED_HOSTS: '127.0.0.1',
      WEBHOOK_RETRY_SCHEDULE_S: '0.2,0.2',
      OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url,
      OTEL_BSP_SCHEDULE_DELAY: '50',
    };
    a = await startInstance(mainJs, { ...shared, OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json' });
    // B joins once A migrated the database; no deliveries there: every attempt is A's
    b = await startInstance(mainJs, {
      ...shared,
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/protobuf',
      OTEL_SERVICE_NAME: 'atrium-b',
      WEBHOOK_DELIVERY_ENABLED: 'false',
    });
    const issued = await client(a.base).post('/api/v1/auth/token', ADMIN);
    expect(issued.status).toBe(200);
    token = issued.body.access_token as string;
    admin = client(a.base, { bearer: token });
    adminB = client(b.base, { bearer: token });
  }, 180_000);

  afterAll(async () => {
    for (const instance of [a, b]) {
      if (instance) {
        instance.child.kill('SIGKILL');
        await instance.exited;
      }
    }
    await otlp.close();
    await hooks.close();
    if (dir) {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  /** The server span of a trace once the receiver has it (and, with `more`, once that holds). */
  async function serverSpan(
    traceId: string,
    more: (trace: ReceivedSpan[]) => boolean = () => true,
  ): Promise<ReceivedSpan> {
    return waitFor(
      () => {
        const trace = otlp.trace(traceId);
        const server = trace.find((s) => s.kind === SERVER);
        return server && more(trace) ? server : undefined;
      },
      { what: () => `the trace ${traceId}: ${JSON.stringify(otlp.trace(traceId), null, 1)}` },
    );
  }

  it('a REST GET continues the caller trace: server span with http.route, SQL spans below it, traceparent back, trace ids in its log line', async () => {
    const user = await admin.post('/api/v1/users', {
      email: `traced-${randomBytes(4).toString('hex')}@example.com`,
      name: 'Traced User',
      password: 'traced-password-1',
    });
    expect(user.status).toBe(201);
    const id = user.body.data.id as string;
    const caller = callerContext();
    const res = await admin.get(`/api/v1/users/${id}`, {
      headers: { traceparent: caller.traceparent },
    });
    expect(res.status).toBe(200);
    const server = await serverSpan(caller.traceId);
    expect(server).toMatchObject({
      service: 'atrium',
      parentSpanId: caller.parentId,
      name: 'GET /api/v1/users/:id',
    });
    expect(server.attributes['http.route']).toBe('/api/v1/users/:id');
    expect(res.headers.get('traceparent')).toBe(`00-${caller.traceId}-${server.spanId}-01`);

    const sql = await waitFor(() => {
      const found = otlp
        .descendants(server)
        .filter(
          (s) => s.attributes['db.system.name'] === (usingPostgres ? 'postgresql' : 'sqlite'),
        );
      return found.length > 0 ? found : undefined;
    });
    const statements = sql.map((s) => String(s.attributes['db.query.text'] ?? ''));
    expect(statements.some((text) => /^\s*SELECT/i.test(text) && /users/i.test(text))).toBe(true);
    // statement text only: the id asked for is a parameter, never in a span
    expect(statements.join('\n')).not.toContain(id);
    for (const span of sql) {
      expect(span.kind).toBe(CLIENT);
    }

    const line = await waitFor(() =>
      logLines(a).find((l) => l.msg === 'request completed' && l.trace_id === caller.traceId),
    );
    expect(line.span_id).toBe(server.spanId);
  });

  it('an error answer carries trace_id next to the request id, and the error is in the trace', async () => {
    const caller = callerContext();
    const res = await admin.get('/api/v1/users/usr_doesnotexist0000000000', {
      headers: { traceparent: caller.traceparent },
    });
    expect(res.status).toBe(404);
    expect(res.body.error.trace_id).toBe(caller.traceId);
    const server = await serverSpan(caller.traceId);
    expect(server.attributes['http.response.status_code']).toBe(404);
  });

  it('a request its caller did not sample makes no span, not even for its SQL, answers its traceparent unsampled and names its trace in an error body', async () => {
    const unsampled = callerContext();
    const res = await admin.get('/api/v1/users?limit=2', {
      headers: { traceparent: unsampled.traceparent.replace(/-01$/, '-00') },
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('traceparent')).toMatch(
      new RegExp(`^00-${unsampled.traceId}-[0-9a-f]{16}-00$`),
    );
    // its error body still names the trace its traceparent names
    const missing = await admin.get('/api/v1/users/usr_doesnotexist0000000000', {
      headers: { traceparent: unsampled.traceparent.replace(/-01$/, '-00') },
    });
    expect(missing.status).toBe(404);
    expect(missing.body.error.trace_id).toBe(unsampled.traceId);
    // a sampled request sent after it is in the receiver: the first one's spans would be by then
    const sampled = callerContext();
    await admin.get('/api/v1/users?limit=2', { headers: { traceparent: sampled.traceparent } });
    await serverSpan(sampled.traceId);
    expect(otlp.trace(unsampled.traceId)).toEqual([]);
  });

  it('without an incoming traceparent a request starts a trace and says which', async () => {
    const res = await admin.get('/api/v1/auth/me');
    expect(res.status).toBe(200);
    const traceparent = res.headers.get('traceparent') ?? '';
    expect(traceparent).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/);
    const [, traceId, spanId] = traceparent.split('-');
    const server = await serverSpan(String(traceId));
    expect(server).toMatchObject({ spanId, parentSpanId: '', name: 'GET /api/v1/auth/me' });
  });

  it('a GraphQL operation is a span with its name, type and computed cost', async () => {
    const caller = callerContext();
    const res = await admin.post(
      '/graphql',
      { query: 'query TracedMe { me { id email } }', operationName: 'TracedMe' },
      { headers: { traceparent: caller.traceparent } },
    );
    expect(res.status).toBe(200);
    expect(res.body.errors).toBeUndefined();
    const cost = res.body.extensions.cost.requested as number;
    const server = await serverSpan(caller.traceId, (trace) =>
      trace.some((s) => s.name === 'query TracedMe'),
    );
    expect(server.name).toBe('POST /graphql');
    const operation = otlp.trace(caller.traceId).find((s) => s.name === 'query TracedMe')!;
    expect(operation.parentSpanId).toBe(server.spanId);
    expect(operation.attributes).toMatchObject({
      'graphql.operation.name': 'TracedMe',
      'graphql.operation.type': 'query',
      'atrium.graphql.cost.requested': cost,
    });
  });

  it('decodes the other instance spans sent as OTLP/protobuf, with their own service name', async () => {
    const caller = callerContext();
    const res = await adminB.get('/api/v1/auth/me', {
      headers: { traceparent: caller.traceparent },
    });
    expect(res.status).toBe(200);
    const server = await serverSpan(caller.traceId);
    expect(server).toMatchObject({
      service: 'atrium-b',
      parentSpanId: caller.parentId,
      name: 'GET /api/v1/auth/me',
    });
    expect(otlp.spans.find((s) => s.spanId === server.spanId)).toMatchObject({
      encoding: 'protobuf',
    });
    expect(otlp.spans.some((s) => s.service === 'atrium' && s.encoding === 'json')).toBe(true);
  });

  it('a WebSocket upgrade continues the caller trace, and each operation its own traceparent or the socket one', async () => {
    const upgrade = callerContext();
    const own = callerContext();
    // the upgrade request carries a traceparent header (a Node client can set one; a browser cannot)
    class TracedSocket extends WebSocket {
      constructor(url: string, protocols?: string | string[]) {
        super(url, protocols, { headers: { traceparent: upgrade.traceparent } });
      }
    }
    const ws = createClient({
      url: `${a.base.replace(/^http/, 'ws')}/graphql`,
      webSocketImpl: TracedSocket,
      connectionParams: { Authorization: `Bearer ${token}` },
      retryAttempts: 0,
      // one socket for both operations
      lazy: false,
    });
    const run = (query: string, extensions?: Record<string, unknown>) =>
      new Promise<unknown>((resolve, reject) => {
        let result: unknown;
        ws.subscribe(
          { query, extensions },
          { next: (v) => (result = v), error: reject, complete: () => resolve(result) },
        );
      });
    try {
      expect(
        await run('query WsOwnTrace { me { id } }', { traceparent: own.traceparent }),
      ).toMatchObject({ data: { me: { id: expect.any(String) } } });
      expect(await run('query WsSocketTrace { me { id } }')).toMatchObject({
        data: { me: { id: expect.any(String) } },
      });
    } finally {
      await ws.dispose();
    }
    const operation = await waitFor(() =>
      otlp.trace(own.traceId).find((s) => s.name === 'query WsOwnTrace'),
    );
    expect(operation).toMatchObject({ parentSpanId: own.parentId, kind: SERVER });
    expect(operation.attributes).toMatchObject({
      'graphql.operation.name': 'WsOwnTrace',
      'graphql.operation.type': 'query',
      'atrium.graphql.transport': 'ws',
    });
    expect(operation.attributes['atrium.graphql.cost.requested']).toEqual(expect.any(Number));
    const socketSpan = await waitFor(() =>
      otlp.trace(upgrade.traceId).find((s) => s.name === 'GET /graphql (websocket)'),
    );
    expect(socketSpan.parentSpanId).toBe(upgrade.parentId);
    const second = await waitFor(() =>
      otlp.trace(upgrade.traceId).find((s) => s.name === 'query WsSocketTrace'),
    );
    expect(second.parentSpanId).toBe(socketSpan.spanId);
  });

  it.skipIf(!usingRedis)(
    'a message sent through one instance: its Redis commands are in the sender trace',
    async () => {
      const room = await adminB.post('/api/v1/rooms', {
        name: `traced-${randomBytes(3).toString('hex')}`,
      });
      expect(room.status).toBe(201);
      const caller = callerContext();
      const sent = await admin.post(
        `/api/v1/rooms/${room.body.data.id as string}/messages`,
        { content: 'over the bus' },
        { headers: { traceparent: caller.traceparent } },
      );
      expect(sent.status).toBe(201);
      const server = await serverSpan(caller.traceId, (trace) =>
        trace.some((s) => s.attributes['db.system.name'] === 'redis'),
      );
      const redis = otlp
        .descendants(server)
        .filter((s) => s.attributes['db.system.name'] === 'redis');
      expect(redis.length).toBeGreaterThan(0);
      expect(redis.map((s) => s.name)).toContain('publish');
      // the other instance reads the message from the same database
      const read = await adminB.get(`/api/v1/rooms/${room.body.data.id as string}/messages`);
      expect(read.body.data.map((m: { content: string }) => m.content)).toContain('over the bus');
    },
  );

  it('a webhook delivery retried once: both attempts are client spans of the change trace, and both requests carry it', async () => {
    hooks.answer = (_req, nth) => ({ status: nth === 1 ? 500 : 200 });
    const endpoint = await admin.post('/api/v1/webhooks', {
      url: hooks.url('/traced'),
      events: ['user.created'],
    });
    expect(endpoint.status).toBe(201);
    const caller = callerContext();
    const created = await admin.post(
      '/api/v1/users',
      {
        email: `hooked-${randomBytes(4).toString('hex')}@example.com`,
        name: 'Hooked',
        password: 'hooked-password-1',
      },
      { headers: { traceparent: caller.traceparent } },
    );
    expect(created.status).toBe(201);
    const requests = await waitFor(() => {
      const got = hooks.received.filter((r) => r.path === '/traced');
      return got.length >= 2 ? got : undefined;
    });
    const attempts = await waitFor(() => {
      const spans = otlp
        .trace(caller.traceId)
        .filter((s) => s.name === 'POST webhook user.created');
      return spans.length >= 2 ? spans : undefined;
    });
    for (const [i, req] of requests.entries()) {
      const [, traceId, spanId] = String(req.headers.traceparent).split('-');
      expect(traceId).toBe(caller.traceId);
      // the request's parent is that attempt's client span
      const span = attempts.find((s) => s.spanId === spanId);
      expect(span, `attempt ${i + 1}`).toBeDefined();
      expect(span!.kind).toBe(CLIENT);
      expect(span!.attributes['atrium.webhook.attempt']).toBe(i + 1);
      expect(span!.attributes['http.response.status_code']).toBe(i === 0 ? 500 : 200);
    }
    expect(attempts.map((s) => s.status).sort()).toEqual([0, 2]);
    // the fan-out batch holding only this change is a span of its trace as well
    expect(otlp.trace(caller.traceId).some((s) => s.name === 'webhook fan-out')).toBe(true);

    // a redelivery asked for later, in a trace of its own, still continues the change's trace
    const deliveries = await admin.get(
      `/api/v1/webhooks/${endpoint.body.data.id as string}/deliveries`,
    );
    expect(deliveries.status).toBe(200);
    const later = callerContext();
    const redeliver = await admin.post(
      `/api/v1/webhooks/${endpoint.body.data.id as string}/deliveries/${deliveries.body.data[0].id as string}/redeliver`,
      undefined,
      { headers: { traceparent: later.traceparent } },
    );
    expect(redeliver.status).toBe(202);
    const third = await waitFor(() => hooks.received.filter((r) => r.path === '/traced')[2]);
    expect(String(third.headers.traceparent).split('-')[1]).toBe(caller.traceId);
    await waitFor(
      () =>
        otlp.trace(caller.traceId).filter((s) => s.name === 'POST webhook user.created').length ===
        3,
    );
  });
});

describe('tracing off', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startApp();
  });
  afterAll(() => t?.close());

  it('without an OTLP endpoint no answer names a trace and an error body has no trace_id', async () => {
    const caller = callerContext();
    const res = await client(t.url).get('/api/v1/users/usr_doesnotexist0000000000', {
      headers: { traceparent: caller.traceparent },
    });
    expect(res.status).toBe(401);
    expect(res.headers.get('traceparent')).toBeNull();
    expect(res.body.error.trace_id).toBeUndefined();
  });

  it('an OTLP protocol the service cannot send stops the boot with one line naming the variable', async () => {
    const child = spawn(process.execPath, [join(serviceBuild(), 'main.js')], {
      cwd: ROOT,
      env: {
        PATH: process.env.PATH ?? '',
        OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4317',
        OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc',
      },
    });
    let err = '';
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    const [code] = (await once(child, 'exit')) as [number | null];
    expect(code).toBe(1);
    expect(err.trim().split('\n')).toEqual([
      'OTEL_EXPORTER_OTLP_PROTOCOL must be one of http/protobuf, http/json (got "grpc")',
    ]);
  });
});
