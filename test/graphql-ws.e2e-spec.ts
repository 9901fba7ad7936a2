import WebSocket from 'ws';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_EMAIL, ADMIN_PASSWORD, startApp, type TestApp } from './helpers/app.js';
import { createApiKey, createUser, tokenFor, type CreatedUser } from './helpers/factories.js';
import { client } from './helpers/http.js';
import { waitFor as until } from './helpers/wait.js';
import { MetricsService } from '../src/metrics/metrics.service.js';
import { scaled } from './helpers/time.js';

interface Frame {
  type: string;
  id?: string;
  payload?: any;
}

/** A raw graphql-transport-ws socket: every frame is visible, so close codes and errors can be asserted. */
async function open(base: string, headers: Record<string, string> = {}) {
  const ws = new WebSocket(`${base.replace(/^http/, 'ws')}/graphql`, 'graphql-transport-ws', {
    headers,
  });
  const frames: Frame[] = [];
  const closed = new Promise<{ code: number; reason: string }>((resolve) =>
    ws.on('close', (code, reason) => resolve({ code, reason: reason.toString() })),
  );
  ws.on('message', (data: Buffer) => frames.push(JSON.parse(data.toString('utf8')) as Frame));
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('error', reject);
    ws.once('unexpected-response', (_req, res) => reject(new Error(`HTTP ${res.statusCode}`)));
  });
  ws.on('error', () => undefined); // a server-side close (e.g. 1009) is asserted through `closed`
  const waitFor = async (match: (f: Frame) => boolean, ms = 3000): Promise<Frame> => {
    const deadline = Date.now() + scaled(ms);
    for (;;) {
      const found = frames.find(match);
      if (found) {
        return found;
      }
      if (Date.now() > deadline) {
        throw new Error(`no matching frame; got ${JSON.stringify(frames)}`);
      }
      await new Promise((r) => setTimeout(r, 5));
    }
  };
  let next = 0;
  return {
    ws,
    frames,
    closed,
    send: (frame: object) => ws.send(JSON.stringify(frame)),
    async init(payload: Record<string, unknown> = {}) {
      ws.send(JSON.stringify({ type: 'connection_init', payload }));
      await waitFor((f) => f.type === 'connection_ack');
    },
    /** Runs one operation; resolves with its `next` payload or its `error` payload. */
    async run(
      query: string,
      variables?: Record<string, unknown>,
    ): Promise<{ next?: any; error?: any[] }> {
      const id = String(++next);
      ws.send(JSON.stringify({ id, type: 'subscribe', payload: { query, variables } }));
      const frame = await waitFor((f) => f.id === id && (f.type === 'next' || f.type === 'error'));
      return frame.type === 'next' ? { next: frame.payload } : { error: frame.payload as any[] };
    },
    close: () => ws.close(),
  };
}

describe('GraphQL over WebSocket (graphql-transport-ws on /graphql)', () => {
  let t: TestApp;
  let adminToken: string;
  let alice: CreatedUser;
  const sockets: { close(): void }[] = [];
  const track = <T extends { close(): void }>(s: T): T => {
    sockets.push(s);
    return s;
  };

  beforeAll(async () => {
    t = await startApp();
    adminToken = await tokenFor(t.url, ADMIN_EMAIL, ADMIN_PASSWORD);
    alice = await createUser(t.url, { name: 'Alice WS' });
  });
  afterAll(async () => {
    sockets.forEach((s) => s.close());
    await t.close();
  });

  it('builds the caller from connection_init (Bearer, Basic, apiKey) and runs queries and mutations', async () => {
    const key = await createApiKey(client(t.url, { bearer: alice.token }));
    const payloads = [
      { Authorization: `Bearer ${alice.token}` },
      {
        authorization: `Basic ${Buffer.from(`${alice.email}:${alice.password}`).toString('base64')}`,
      },
      { apiKey: key.key },
    ];
    for (const payload of payloads) {
      const s = track(await open(t.url));
      await s.init(payload);
      const res = await s.run('{ me { id name } }');
      expect(res.next, JSON.stringify(payload)).toEqual({
        data: { me: { id: alice.id, name: 'Alice WS' } },
      });
      s.close();
    }
    const s = track(await open(t.url));
    await s.init({ Authorization: `Bearer ${alice.token}` });
    const created = await s.run(
      'mutation { createPost(input: { title: "over ws", body: "" }) { title author { id } } }',
    );
    expect(created.next).toEqual({
      data: { createPost: { title: 'over ws', author: { id: alice.id } } },
    });
  });

  it('closes the socket with 4403 for invalid credentials', async () => {
    for (const payload of [{ Authorization: 'Bearer nope' }, { apiKey: 'atr_not-a-real-key' }]) {
      const s = track(await open(t.url));
      s.send({ type: 'connection_init', payload });
      expect((await s.closed).code).toBe(4403);
    }
  });

  it('lets anonymous sockets introspect only (UNAUTHENTICATED otherwise)', async () => {
    const s = track(await open(t.url));
    await s.init();
    expect((await s.run('{ __typename }')).next).toEqual({ data: { __typename: 'Query' } });
    const me = await s.run('{ me { id } }');
    expect(me.error?.map((e) => e.extensions?.code)).toEqual(['UNAUTHENTICATED']);
  });

  it('enforces @auth per field: FORBIDDEN with the field null and the rest of the data', async () => {
    const s = track(await open(t.url));
    await s.init({ Authorization: `Bearer ${alice.token}` });
    const res = await s.run('{ me { id } admins { id } }');
    expect(res.next.data).toEqual({ me: { id: alice.id }, admins: null });
    expect(res.next.errors).toEqual([
      expect.objectContaining({ path: ['admins'], extensions: { code: 'FORBIDDEN' } }),
    ]);
    const admin = track(await open(t.url));
    await admin.init({ Authorization: `Bearer ${adminToken}` });
    expect((await admin.run('{ admins { id } }')).next.data.admins).toHaveLength(1);
  });

  it('applies the depth and cost limits and formats errors like HTTP (codes, no hints)', async () => {
    const s = track(await open(t.url));
    await s.init({ Authorization: `Bearer ${adminToken}` });
    const expensive = await s.run(
      '{ users(first: 100) { nodes { posts(first: 100) { nodes { id } } } } }',
    );
    expect(expensive.error?.map((e) => e.extensions?.code)).toEqual(['QUERY_TOO_COMPLEX']);
    const deep =
      '{ me { posts(first: 1) { nodes { author { posts(first: 1) { nodes { author { posts(first: 1) { nodes { author { posts(first: 1) { nodes { id } } } } } } } } } } } } }';
    const tooDeep = await s.run(deep);
    expect(tooDeep.error).toEqual([
      expect.objectContaining({
        message: 'Query depth exceeds the maximum of 12',
        extensions: expect.objectContaining({ code: 'QUERY_TOO_COMPLEX' }),
      }),
    ]);
    const typo = await s.run('{ usr { id } }');
    expect(typo.error?.map((e) => e.extensions?.code)).toEqual(['GRAPHQL_VALIDATION_FAILED']);
    expect(JSON.stringify(typo.error)).not.toMatch(/Did you mean/);
    const variables = await s.run('query($id: ID!) { user(id: $id) { id } }', {});
    expect(JSON.stringify(variables)).toMatch(/BAD_USER_INPUT/);
    const missing = await s.run('{ user(id: "usr_nope") { id } }');
    expect(
      missing.next.errors.map((e: { extensions: { code: string } }) => e.extensions.code),
    ).toEqual(['NOT_FOUND']);
    expect(JSON.stringify(missing.next)).not.toMatch(/stacktrace/);
  });

  it('refuses an operation with the error HTTP gives it: one gate for both transports', async () => {
    const operations: {
      query: string;
      variables?: Record<string, unknown>;
      anonymous?: boolean;
    }[] = [
      { query: '{ users(first: 5) { nodes { id } } }', anonymous: true },
      { query: '{ users(first: 100) { nodes { posts(first: 100) { nodes { id } } } } }' },
      { query: 'query($n: Int) { users(first: $n) { nodes { id } } }', variables: { n: 'x' } },
    ];
    const anonymous = track(await open(t.url));
    await anonymous.init();
    const signedIn = track(await open(t.url));
    await signedIn.init({ Authorization: `Bearer ${adminToken}` });
    for (const { query, variables, anonymous: anon } of operations) {
      const overHttp = await client(t.url, anon ? {} : { bearer: adminToken }).post('/graphql', {
        query,
        variables,
      });
      const overWs = await (anon ? anonymous : signedIn).run(query, variables);
      const shape = (e: { message: string; extensions?: { code?: string } }) => ({
        message: e.message,
        code: e.extensions?.code,
      });
      expect(overHttp.body.errors.length).toBe(1);
      expect(overWs.error?.map(shape)).toEqual(overHttp.body.errors.map(shape));
    }
  });

  it('refuses a message over 64 KiB by closing the socket (1009)', async () => {
    const s = track(await open(t.url));
    await s.init({ Authorization: `Bearer ${adminToken}` });
    s.send({
      id: 'big',
      type: 'subscribe',
      payload: { query: `{ __typename } # ${'x'.repeat(70 * 1024)}` },
    });
    expect((await s.closed).code).toBe(1009);
  });

  it('checks the Origin of the upgrade against CORS_ORIGINS', async () => {
    await expect(open(t.url, { origin: 'https://evil.example' })).rejects.toThrow('HTTP 403');
    const studio = track(await open(t.url, { origin: 'https://studio.apollographql.com' }));
    await studio.init({ Authorization: `Bearer ${adminToken}` });
    expect((await studio.run('{ __typename }')).next).toEqual({ data: { __typename: 'Query' } });
  });

  it('accepts a page of this server itself at whatever address it was opened at (same origin)', async () => {
    const port = new URL(t.url).port;
    // (http://127.0.0.1:PORT is in the default CORS_ORIGINS too; the LAN name below is in none)
    const own = track(await open(t.url, { origin: t.url }));
    await own.init({ Authorization: `Bearer ${adminToken}` });
    expect((await own.run('{ __typename }')).next).toEqual({ data: { __typename: 'Query' } });
    // a LAN name: the Host the browser addressed is what the Origin is compared with
    const lan = track(
      await open(t.url, { origin: `http://dev-box.test:${port}`, host: `dev-box.test:${port}` }),
    );
    await lan.init({ Authorization: `Bearer ${adminToken}` });
    expect((await lan.run('{ __typename }')).next).toEqual({ data: { __typename: 'Query' } });
    // another port or another scheme's default port is another origin
    await expect(
      open(t.url, { origin: 'http://dev-box.test:1', host: `dev-box.test:${port}` }),
    ).rejects.toThrow('HTTP 403');
    await expect(
      open(t.url, { origin: 'https://dev-box.test', host: `dev-box.test:${port}` }),
    ).rejects.toThrow('HTTP 403');
    // X-Forwarded-Host counts only from a trusted proxy (TRUSTED_PROXIES is empty here)
    await expect(
      open(t.url, { origin: 'https://api.example', 'x-forwarded-host': 'api.example' }),
    ).rejects.toThrow('HTTP 403');
  });

  it('takes the host from X-Forwarded-Host behind a trusted proxy', async () => {
    const proxied = await startApp({ TRUSTED_PROXIES: 'loopback' });
    try {
      const token = await tokenFor(proxied.url, ADMIN_EMAIL, ADMIN_PASSWORD);
      const s = track(
        await open(proxied.url, {
          origin: 'https://api.example',
          'x-forwarded-host': 'api.example',
          'x-forwarded-proto': 'https',
        }),
      );
      await s.init({ Authorization: `Bearer ${token}` });
      expect((await s.run('{ __typename }')).next).toEqual({ data: { __typename: 'Query' } });
      await expect(
        open(proxied.url, { origin: 'https://evil.example', 'x-forwarded-host': 'api.example' }),
      ).rejects.toThrow('HTTP 403');
    } finally {
      await proxied.close();
    }
  });
});

describe('GraphQL over WebSocket with introspection off', () => {
  it('refuses __schema over the socket too', async () => {
    const t = await startApp({ GRAPHQL_INTROSPECTION: 'false' });
    try {
      const s = await open(t.url);
      await s.init();
      const res = await s.run('{ __schema { types { name } } }');
      expect(res.error?.length).toBeGreaterThan(0);
      expect(new Set(res.error?.map((e) => e.extensions?.code))).toEqual(
        new Set(['GRAPHQL_VALIDATION_FAILED']),
      );
      expect(res.error?.[0]?.message).toMatch(/introspection/i);
      expect((await s.run('{ __typename }')).next).toEqual({ data: { __typename: 'Query' } });
      s.close();
    } finally {
      await t.close();
    }
  });
});

describe('GraphQL over WebSocket keep-alive (WS_KEEPALIVE_MS)', () => {
  it('pings a socket and drops one that stopped answering; one that answers stays', async () => {
    const t = await startApp({ WS_KEEPALIVE_MS: '1000' });
    try {
      const live = await open(t.url);
      await live.init();
      const pings: number[] = [];
      live.ws.on('ping', () => pings.push(Date.now()));
      const silent = await open(t.url);
      await silent.init();
      // the client stops reading its socket: the server's pings go unanswered
      const socket = (silent.ws as unknown as { _socket: { pause(): void; resume(): void } })
        ._socket;
      socket.pause();
      let closedAt: number | undefined;
      void silent.closed.then(() => (closedAt = Date.now()));
      // dropped when its ping goes unanswered for WS_KEEPALIVE_MS (1-2 s): wait until the server
      // counts one open socket, the live one; the paused client reads the end of the stream once it
      // reads again
      const metrics = t.app.get(MetricsService);
      const openSockets = async () =>
        (await metrics.websocketConnections.get()).values.reduce((n, v) => n + v.value, 0);
      expect(await openSockets()).toBe(2);
      await until(async () => (await openSockets()) === 1, { what: 'the silent socket dropped' });
      socket.resume();
      const { code } = await silent.closed;
      expect(code).toBe(1006); // no close frame: dropped, not closed
      expect(closedAt).toBeDefined();
      expect(pings.length).toBeGreaterThanOrEqual(1);
      expect((await live.run('{ __typename }')).next).toEqual({ data: { __typename: 'Query' } });
      live.close();
    } finally {
      await t.close();
    }
  });
});
