import { createClient, type Client as WsClient } from 'graphql-ws';
import { expect } from 'vitest';
import WebSocket from 'ws';
import { EventsService } from '../src/events/events.service.js';
import type { TestApp } from './helpers/app.js';
import { unique, type CreatedUser } from './helpers/factories.js';
import { authHeaders, request, type Credentials } from './helpers/http.js';
import { scaled } from './helpers/time.js';

/** A new room of `user` (REST); its id. */
export async function newRoom(user: CreatedUser): Promise<string> {
  const res = await user.client.post('/api/v1/rooms', { name: unique('room-') });
  expect(res.status).toBe(201);
  return res.body.data.id as string;
}

/** A GraphQL operation over HTTP. */
export async function gql(
  base: string,
  auth: Credentials | undefined,
  query: string,
  variables?: object,
) {
  const res = await request(base, '/graphql', { method: 'POST', auth, body: { query, variables } });
  return res.body as { data?: any; errors?: { message: string; extensions?: { code?: string } }[] };
}

export function connectionParams(auth: Credentials | undefined): Record<string, string> {
  const h = authHeaders(auth);
  return h.authorization
    ? { Authorization: h.authorization }
    : h['x-api-key']
      ? { apiKey: h['x-api-key'] }
      : {};
}

export interface Socket {
  client: WsClient;
  /** Resolves with the close code once the socket closes. */
  closed: Promise<number>;
  dispose(): Promise<void>;
}

/** A real graphql-ws client (subprotocol graphql-transport-ws) with credentials in connection_init. */
export async function connect(base: string, auth: Credentials | undefined): Promise<Socket> {
  let onClosed!: (code: number) => void;
  const closed = new Promise<number>((resolve) => (onClosed = resolve));
  let ack!: () => void;
  let fail!: (err: unknown) => void;
  const acked = new Promise<void>((resolve, reject) => {
    ack = resolve;
    fail = reject;
  });
  const client = createClient({
    url: `${base.replace(/^http/, 'ws')}/graphql`,
    webSocketImpl: WebSocket,
    connectionParams: connectionParams(auth),
    lazy: false,
    retryAttempts: 0,
    on: {
      connected: () => ack(),
      closed: (event) => {
        const code = (event as { code?: number })?.code ?? 0;
        onClosed(code);
        fail(new Error(`socket closed with ${code}`));
      },
    },
    onNonLazyError: () => undefined,
  });
  await acked;
  return { client, closed, dispose: () => client.dispose() as Promise<void> };
}

export interface Subscription<T = any> {
  events: T[];
  errors: unknown[];
  completed: boolean;
  /** Waits until at least n events arrived (or fails after timeoutMs). */
  waitFor(n: number, timeoutMs?: number): Promise<T[]>;
  /** Waits for the first error (e.g. NOT_FOUND at subscribe). */
  waitForError(timeoutMs?: number): Promise<unknown>;
  stop(): void;
}

export function subscribe<T = any>(
  socket: Socket,
  query: string,
  variables?: object,
): Subscription<T> {
  const sub: Subscription<T> = {
    events: [],
    errors: [],
    completed: false,
    waitFor: (n, timeoutMs = 5_000) =>
      until(
        () => sub.events.length >= n,
        timeoutMs,
        () => `${sub.events.length}/${n} events, errors ${JSON.stringify(sub.errors)}`,
      ).then(() => sub.events),
    waitForError: (timeoutMs = 5_000) =>
      until(
        () => sub.errors.length > 0,
        timeoutMs,
        () => 'no error',
      ).then(() => sub.errors[0]),
    stop: () => undefined,
  };
  sub.stop = socket.client.subscribe<T>(
    { query, variables: variables as Record<string, unknown> },
    {
      next: (value) => {
        if (value.errors?.length) {
          sub.errors.push(value.errors);
        }
        if (value.data) {
          sub.events.push(value.data);
        }
      },
      error: (err) => sub.errors.push(err),
      complete: () => {
        sub.completed = true;
      },
    },
  );
  return sub;
}

export async function until(
  check: () => boolean,
  timeoutMs = 5_000,
  describe = () => '',
): Promise<void> {
  const deadline = Date.now() + scaled(timeoutMs);
  while (!check()) {
    if (Date.now() > deadline) {
      throw new Error(`timed out after ${timeoutMs} ms: ${describe()}`);
    }
    await new Promise((r) => setTimeout(r, 5));
  }
}

/** Waits until the app has at least `count` local subscribers on `topic` (the subscription is live). */
export async function listening(t: TestApp, topic: string, count = 1): Promise<void> {
  const events = t.app.get(EventsService);
  await until(
    () => events.listenerCount(topic) >= count,
    5_000,
    () => `${events.listenerCount(topic)} listeners on ${topic}`,
  );
}

/** A raw WebSocket speaking graphql-transport-ws by hand (protocol-level tests: close codes). */
export async function rawSocket(base: string, headers: Record<string, string> = {}) {
  const ws = new WebSocket(`${base.replace(/^http/, 'ws')}/graphql`, 'graphql-transport-ws', {
    headers,
  });
  const closed = new Promise<{ code: number; reason: string }>((resolve) =>
    ws.on('close', (code, reason) => resolve({ code, reason: reason.toString() })),
  );
  const messages: any[] = [];
  ws.on('message', (data: Buffer) => messages.push(JSON.parse(data.toString('utf8'))));
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('error', reject);
    ws.once('unexpected-response', (_req, res) => reject(new Error(`HTTP ${res.statusCode}`)));
  });
  return { ws, closed, messages, send: (msg: object) => ws.send(JSON.stringify(msg)) };
}

export function expectNoErrors(body: { errors?: unknown[] }): void {
  expect(body.errors, JSON.stringify(body.errors)).toBeUndefined();
}
