import { once } from 'node:events';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { EventsService, TOPICS } from '../src/events/events.service.js';
import { startApp, type TestApp } from './helpers/app.js';
import { createApiKey } from './helpers/factories.js';
import { request } from './helpers/http.js';
import { signUp, type SignedUp } from './helpers/rate-limit.js';
import { listening, until } from './subscriptions-helpers.js';
import { scaled } from './helpers/time.js';

interface Message {
  id?: string;
  type: string;
  payload?: any;
}

/** A raw graphql-transport-ws connection: every message kept, so tests can wait for a specific one. */
class RawSocket {
  readonly messages: Message[] = [];
  closeCode: number | undefined;
  private readonly waiters: (() => void)[] = [];

  private constructor(readonly ws: WebSocket) {
    ws.on('message', (data: Buffer) => {
      this.messages.push(JSON.parse(data.toString()) as Message);
      this.waiters.splice(0).forEach((w) => w());
    });
    ws.on('close', (code: number) => {
      this.closeCode = code;
      this.waiters.splice(0).forEach((w) => w());
    });
  }

  /** Opens and sends connection_init; resolves once acknowledged or closed. */
  static async open(base: string, params: Record<string, string>): Promise<RawSocket> {
    const ws = new WebSocket(`${base.replace(/^http/, 'ws')}/graphql`, 'graphql-transport-ws');
    const socket = new RawSocket(ws);
    await once(ws, 'open');
    ws.send(JSON.stringify({ type: 'connection_init', payload: params }));
    await socket.until(() => socket.acked || socket.closeCode !== undefined);
    return socket;
  }

  get acked(): boolean {
    return this.messages.some((m) => m.type === 'connection_ack');
  }

  async until(done: () => boolean, timeoutMs = 3_000): Promise<void> {
    const deadline = Date.now() + scaled(timeoutMs);
    while (!done()) {
      if (Date.now() > deadline) {
        throw new Error(
          `timed out; messages: ${JSON.stringify(this.messages)}, close ${this.closeCode}`,
        );
      }
      await new Promise<void>((resolve) => {
        this.waiters.push(resolve);
        setTimeout(resolve, 50);
      });
    }
  }

  subscribe(id: string, query: string): void {
    this.ws.send(JSON.stringify({ id, type: 'subscribe', payload: { query } }));
  }

  complete(id: string): void {
    this.ws.send(JSON.stringify({ id, type: 'complete' }));
  }

  /**
   * A ping/pong round trip: the server handles a socket's messages in order, so once the pong is
   * back every message sent before the ping (a `complete`, say) has been processed.
   */
  async roundTrip(): Promise<void> {
    const pongs = this.messages.filter((m) => m.type === 'pong').length;
    this.ws.send(JSON.stringify({ type: 'ping' }));
    await this.until(() => this.messages.filter((m) => m.type === 'pong').length > pongs);
  }

  of(id: string, type: string): Message[] {
    return this.messages.filter((m) => m.id === id && m.type === type);
  }

  async close(): Promise<void> {
    if (this.closeCode === undefined) {
      this.ws.close(1000);
      await this.until(() => this.closeCode !== undefined);
    }
  }
}

describe('WebSocket caps', () => {
  let t: TestApp;
  let u: SignedUp;
  const open: RawSocket[] = [];
  const connect = async (params: Record<string, string>) => {
    const s = await RawSocket.open(t.url, params);
    open.push(s);
    return s;
  };

  beforeAll(async () => {
    t = await startApp({
      WS_MAX_CONNECTIONS_PER_IDENTITY: '2',
      WS_MAX_OPERATIONS_PER_CONNECTION: '2',
    });
    u = await signUp(t.url);
  });
  afterAll(async () => {
    await Promise.all(open.map((s) => s.close()));
    await t.close();
  });

  it('closes a connection beyond the per-identity cap with 4429, and frees the slot on close', async () => {
    const bearer = { Authorization: `Bearer ${u.token}` };
    const a = await connect(bearer);
    const b = await connect(bearer);
    expect(a.acked && b.acked).toBe(true);
    const c = await connect(bearer);
    expect(c.acked).toBe(false);
    expect(c.closeCode).toBe(4429);

    // the owner's API key is the same identity (keys spend their owner's budget)
    const key = await createApiKey(u.client);
    const byKey = await connect({ apiKey: key.key });
    expect(byKey.acked).toBe(false);
    expect(byKey.closeCode).toBe(4429);

    await a.close();
    // the server frees the slot when it sees the close: retry until it has (each refused try is
    // closed with 4429 and holds nothing); the freed slot serves the owner's key too
    const deadline = Date.now() + scaled(3_000);
    let d = await connect({ apiKey: key.key });
    while (!d.acked && Date.now() < deadline) {
      expect(d.closeCode).toBe(4429);
      d = await connect({ apiKey: key.key });
    }
    expect(d.acked).toBe(true);
    await Promise.all([b.close(), d.close()]);
  });

  it('refuses an operation beyond the per-connection cap with RATE_LIMITED, and admits one when another ends', async () => {
    const s = await connect({ Authorization: `Bearer ${u.token}` });
    expect(s.acked).toBe(true);
    const sub = `subscription { userUpdated(id: "${u.id}") { id name } }`;
    s.subscribe('1', sub);
    s.subscribe('2', sub);
    s.subscribe('3', sub);
    await s.until(() => s.of('3', 'error').length > 0);
    expect(s.of('3', 'error')[0]?.payload[0].extensions.code).toBe('RATE_LIMITED');
    expect(s.of('1', 'error')).toEqual([]);
    expect(s.of('2', 'error')).toEqual([]);

    s.complete('1');
    await s.roundTrip();
    // the app listens for '2' alone, then for '2' and '4' (with Redis, a subscription is set up
    // asynchronously: the change below must not come before it)
    const events = t.app.get(EventsService);
    const topic = TOPICS.userUpdated(u.id);
    await until(
      () => events.listenerCount(topic) === 1,
      5_000,
      () => `${events.listenerCount(topic)} listeners`,
    );
    s.subscribe('4', sub);
    await listening(t, topic, 2);
    // '2' and '4' are live: a change of the user reaches both
    const patched = await u.client.patch(
      `/api/v1/users/${u.id}`,
      { name: 'Renamed over WS' },
      {
        headers: { 'content-type': 'application/merge-patch+json' },
      },
    );
    expect(patched.status).toBe(200);
    await s.until(() => s.of('2', 'next').length > 0 && s.of('4', 'next').length > 0);
    expect(s.of('4', 'next')[0]?.payload.data.userUpdated.name).toBe('Renamed over WS');
    expect(s.of('4', 'error')).toEqual([]);
    expect(s.of('1', 'next')).toEqual([]);
    await s.close();
  });
});

describe('WebSocket operations and credentials against the shared counters', () => {
  it('spends each operation’s cost from the identity’s budget (shared with HTTP); over it, RATE_LIMITED', async () => {
    // the expensive operation costs 1 + 50 × (1 + (1 + 2)) = 201: one fits, two do not
    const t = await startApp({ GRAPHQL_COST_BUDGET: '300', GRAPHQL_COST_WINDOW_S: '30' });
    try {
      const u = await signUp(t.url);
      const s = await RawSocket.open(t.url, { Authorization: `Bearer ${u.token}` });
      const expensive = '{ users(first: 50) { edges { node { id name } } } }';
      s.subscribe('1', expensive);
      await s.until(() => s.of('1', 'complete').length > 0 || s.of('1', 'error').length > 0);
      expect(s.of('1', 'error')).toEqual([]);
      s.subscribe('2', expensive);
      await s.until(() => s.of('2', 'error').length > 0 || s.of('2', 'complete').length > 0);
      expect(s.of('2', 'error')[0]?.payload[0].extensions.code).toBe('RATE_LIMITED');
      // HTTP sees what the socket spent
      const http = await u.client.post('/graphql', { query: '{ me { id } }' });
      expect(http.status).toBe(200);
      expect(http.body.extensions.cost.remaining).toBe(300 - 201 - 2);
      await s.close();
    } finally {
      await t.close();
    }
  });

  it('counts failed connection_init credentials against the address’s auth bucket; over it, 4429 for wrong ones only', async () => {
    const t = await startApp({
      AUTH_RATE_LIMIT: '2',
      AUTH_RATE_LIMIT_WINDOW_S: '30',
      TRUSTED_PROXIES: '127.0.0.1',
    });
    try {
      // signed up from another (forwarded) address: its requests do not touch 127.0.0.1's bucket
      const u = await signUp(t.url, '10.7.0.1');
      const bad = await RawSocket.open(t.url, { Authorization: 'Bearer not.a.jwt' });
      expect(bad.closeCode).toBe(4403);
      const bad2 = await RawSocket.open(t.url, { apiKey: 'ak_no_such_key_000000000000' });
      expect(bad2.closeCode).toBe(4403);
      const bad3 = await RawSocket.open(t.url, { Authorization: 'Bearer again.not.a.jwt' });
      expect(bad3.acked).toBe(false);
      expect(bad3.closeCode).toBe(4429);
      // REST from the same address shares the bucket: wrong credentials 429, valid ones served
      const wrong = await request(t.url, '/api/v1/auth/me', {
        headers: { authorization: 'Bearer not.a.jwt' },
      });
      expect(wrong.status).toBe(429);
      const good = await RawSocket.open(t.url, { Authorization: `Bearer ${u.token}` });
      expect(good.acked).toBe(true);
      await good.close();
      expect((await u.client.get('/api/v1/auth/me')).status).toBe(200);
    } finally {
      await t.close();
    }
  });
});
