import { once } from 'node:events';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { startApp, type TestApp } from './helpers/app.js';
import {
  GRAPHQL_ERROR_CODES,
  graphqlErrorsProblem,
  restEnvelopeProblem,
} from './helpers/contract.js';
import { createUser, type CreatedUser } from './helpers/factories.js';
import { request } from './helpers/http.js';
import { RawConnection, parseResponse } from './helpers/raw-http.js';

// Abusive clients, each answered as documented (docs/limits.md, "Abuse"), while a well-behaved client
// keeps getting its answers. Correctness only: the latency of the good client under the same abuse is
// measured by `npm run bench -- --abuse` (bench/abuse.mjs), never here.

const HEADERS_MS = 500;
const WS_CONNECTIONS = 10;
const WS_OPERATIONS = 50;
/** Requests per identity per window: the flooding socket runs out, the good client never does. */
const RATE_LIMIT = 3_000;

let t: TestApp;
let good: CreatedUser;

beforeAll(async () => {
  t = await startApp({
    HTTP_HEADERS_TIMEOUT_MS: String(HEADERS_MS),
    HTTP_REQUEST_TIMEOUT_MS: String(HEADERS_MS * 2),
    RATE_LIMIT: String(RATE_LIMIT),
    WS_MAX_CONNECTIONS_PER_IDENTITY: String(WS_CONNECTIONS),
    WS_MAX_OPERATIONS_PER_CONNECTION: String(WS_OPERATIONS),
  });
  good = await createUser(t.url);
});
afterAll(() => t?.close());

/**
 * Runs the well-behaved client (a REST read and a GraphQL query, in turn) for as long as `abuse` is
 * running, and at least four requests; returns the abuse's result and every answer the client got.
 */
async function whileGoodClient<T>(abuse: Promise<T>): Promise<{ result: T; answers: string[] }> {
  let done = false;
  const settled = abuse.finally(() => {
    done = true;
  });
  const answers: string[] = [];
  while (!done || answers.length < 4) {
    const rest = await good.client.get(`/api/v1/users/${good.id}`);
    answers.push(`rest ${rest.status}${rest.body?.data?.id === good.id ? '' : ' wrong body'}`);
    const gql = await request(t.url, '/graphql', {
      method: 'POST',
      auth: { bearer: good.token },
      body: { query: '{ me { id } }' },
    });
    answers.push(
      `graphql ${gql.status}${gql.body?.data?.me?.id === good.id ? '' : ` ${gql.text}`}`,
    );
  }
  return { result: await settled, answers };
}

function expectAllGood(answers: string[]): void {
  expect(answers.length).toBeGreaterThanOrEqual(4);
  expect(answers.filter((a) => a !== 'rest 200' && a !== 'graphql 200')).toEqual([]);
}

function expectEnvelope(text: string, status: number): void {
  const res = parseResponse(text);
  expect(res.status, text.slice(0, 300)).toBe(status);
  expect(restEnvelopeProblem(status, JSON.parse(res.body)), res.body).toBeUndefined();
}

interface WsMessage {
  id?: string;
  type: string;
  payload?: any;
}

/** A graphql-transport-ws socket, messages kept by id; resolves once acknowledged or closed. */
async function openSocket(token: string) {
  const ws = new WebSocket(`${t.url.replace(/^http/, 'ws')}/graphql`, 'graphql-transport-ws');
  const byId = new Map<string, WsMessage[]>();
  let acked = false;
  let closeCode: number | undefined;
  const waiters: (() => void)[] = [];
  const wake = () => waiters.splice(0).forEach((w) => w());
  ws.on('message', (data: Buffer) => {
    const msg = JSON.parse(data.toString('utf8')) as WsMessage;
    if (msg.type === 'connection_ack') {
      acked = true;
    } else if (msg.id !== undefined) {
      byId.set(msg.id, [...(byId.get(msg.id) ?? []), msg]);
    }
    wake();
  });
  ws.on('close', (code: number) => {
    closeCode = code;
    wake();
  });
  ws.on('error', () => undefined);
  const until = async (condition: () => boolean, what: string, timeoutMs = 20_000) => {
    const deadline = Date.now() + timeoutMs;
    while (!condition()) {
      if (Date.now() > deadline) {
        throw new Error(`timed out waiting for ${what}`);
      }
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, deadline - Date.now());
        waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
  };
  await once(ws, 'open');
  ws.send(
    JSON.stringify({ type: 'connection_init', payload: { Authorization: `Bearer ${token}` } }),
  );
  await until(() => acked || closeCode !== undefined, 'connection_ack or close');
  return {
    ws,
    byId,
    until,
    get acked() {
      return acked;
    },
    get closeCode() {
      return closeCode;
    },
  };
}

describe('abuse', () => {
  it('many slow clients trickling their headers are each cut with 408 at the header timeout, and the good client keeps getting 200s', async () => {
    const SLOW = 150;
    const slow = await Promise.all(Array.from({ length: SLOW }, () => RawConnection.open(t.url)));
    const head = `GET /api/v1/users HTTP/1.1\r\nHost: atrium.test\r\nX-Pad: ${'a'.repeat(1000)}\r\n\r\n`;
    let sent = 0;
    const timer = setInterval(() => {
      for (const c of slow) {
        if (!c.isClosed && sent < head.length) {
          c.write(head[sent]);
        }
      }
      sent++;
    }, 50);
    try {
      const { answers } = await whileGoodClient(Promise.all(slow.map((c) => c.closed)));
      expect(sent).toBeLessThan(head.length); // cut before any of them finished its headers
      for (const c of slow) {
        expectEnvelope(c.text, 408);
      }
      expectAllGood(answers);
    } finally {
      clearInterval(timer);
      slow.forEach((c) => c.destroy());
    }
  });

  it('requests with oversized headers get 431 in the envelope, and the good client keeps getting 200s', async () => {
    const big = `GET /api/v1/users HTTP/1.1\r\nHost: atrium.test\r\nX-Big: ${'b'.repeat(20 * 1024)}\r\n\r\n`;
    const { result, answers } = await whileGoodClient(
      Promise.all(
        Array.from({ length: 50 }, async () => {
          const c = await RawConnection.open(t.url);
          c.write(big);
          await c.closed;
          return c.text;
        }),
      ),
    );
    for (const text of result) {
      expectEnvelope(text, 431);
    }
    expectAllGood(answers);
  });

  it('10,000 messages on one socket (pings and operations): each answered (pong; a result, or RATE_LIMITED past the per-connection and per-identity limits), the socket stays open, the good client keeps getting 200s', async () => {
    const flooder = await createUser(t.url);
    const socket = await openSocket(flooder.token);
    expect(socket.acked).toBe(true);
    let pongs = 0;
    socket.ws.on('message', (data: Buffer) => {
      if ((JSON.parse(data.toString('utf8')) as WsMessage).type === 'pong') {
        pongs++;
      }
    });
    const N = 10_000;
    const EVERY = 5; // every 5th message an operation, the others pings
    const operations = N / EVERY;
    const flood = (async () => {
      for (let i = 0; i < N; i++) {
        socket.ws.send(
          JSON.stringify(
            i % EVERY === 0
              ? { id: String(i), type: 'subscribe', payload: { query: '{ __typename }' } }
              : { type: 'ping' },
          ),
        );
      }
      const terminal = (id: string) =>
        socket.byId.get(id)?.some((m) => m.type === 'complete' || m.type === 'error') ?? false;
      await socket.until(
        () =>
          pongs === N - operations &&
          socket.byId.size === operations &&
          [...socket.byId.keys()].every(terminal),
        `an answer to every message (pongs ${pongs}, operations ${socket.byId.size}, done ${[...socket.byId.keys()].filter(terminal).length})`,
        120_000,
      );
    })();
    const { answers } = await whileGoodClient(flood);
    expectAllGood(answers);

    const outcomes = new Map<string, number>();
    for (const messages of socket.byId.values()) {
      const last = messages.at(-1)!;
      const outcome =
        last.type === 'error' ? `error ${last.payload?.[0]?.extensions?.code}` : last.type;
      outcomes.set(outcome, (outcomes.get(outcome) ?? 0) + 1);
    }
    // nothing but results and RATE_LIMITED refusals
    expect(
      [...outcomes.keys()].filter((o) => o !== 'complete' && o !== 'error RATE_LIMITED'),
    ).toEqual([]);
    expect(outcomes.get('complete') ?? 0).toBeGreaterThan(0);
    expect(socket.closeCode).toBeUndefined();
    socket.ws.close();
  }, 150_000);

  it('many sockets from one identity: the first WS_MAX_CONNECTIONS_PER_IDENTITY are acknowledged, the rest closed with 4429; another identity still connects and the good client keeps getting 200s', async () => {
    const greedy = await createUser(t.url);
    const { result: sockets, answers } = await whileGoodClient(
      Promise.all(Array.from({ length: 40 }, () => openSocket(greedy.token))),
    );
    try {
      expect(sockets.filter((s) => s.acked).length).toBe(WS_CONNECTIONS);
      const refused = sockets.filter((s) => !s.acked);
      expect(refused.map((s) => s.closeCode)).toEqual(refused.map(() => 4429));
      const other = await openSocket(good.token);
      expect(other.acked).toBe(true);
      other.ws.close();
      expectAllGood(answers);
    } finally {
      sockets.forEach((s) => s.ws.close());
    }
  });

  it('GraphQL batch arrays and alias floods are refused with documented errors before they run, and the good client keeps getting 200s', async () => {
    const flooder = await createUser(t.url);
    const aliases = `{ ${Array.from({ length: 2000 }, (_, i) => `a${i}: me { id }`).join(' ')} }`;
    const batch = Array.from({ length: 1000 }, () => ({ query: '{ me { id name } }' }));
    const send = (body: unknown) =>
      request(t.url, '/graphql', { method: 'POST', auth: { bearer: flooder.token }, body });
    const { result, answers } = await whileGoodClient(
      Promise.all(Array.from({ length: 10 }, (_, i) => send(i % 2 ? batch : { query: aliases }))),
    );
    expectAllGood(answers);
    for (const [i, res] of result.entries()) {
      if (i % 2) {
        // a batch of 1000: refused as a whole (batching off or over its bound), with documented codes
        expect(res.status, res.text.slice(0, 300)).toBeGreaterThanOrEqual(400);
        expect(res.status).toBeLessThan(500);
        expect(graphqlErrorsProblem(res.body), res.text.slice(0, 300)).toBeUndefined();
        expect(res.body.errors.length).toBeGreaterThan(0);
      } else {
        expect(res.status).toBe(200);
        expect(res.body.data).toBeUndefined();
        expect(res.body.errors.map((e: any) => e.extensions.code)).toEqual(['QUERY_TOO_COMPLEX']);
        expect(res.body.errors[0].extensions.document.limit).toBeDefined();
      }
    }
    expect(GRAPHQL_ERROR_CODES).toContain('QUERY_TOO_COMPLEX');
  });
});
