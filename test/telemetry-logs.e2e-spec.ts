import type { DestinationStream } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApp, type TestApp } from './helpers/app.js';
import { adminClient, createApiKey, createUser, unique } from './helpers/factories.js';
import { client, request } from './helpers/http.js';
import { authorize, exchangeCode, registerClient } from './helpers/oauth.js';
import { connect, rawSocket, subscribe, until } from './subscriptions-helpers.js';

/** A log line as the application writes it (pino JSON). */
type Line = Record<string, any> & { level: number; msg?: string };

/** The application's log output, captured line by line (the same JSON it writes to stdout). */
class CapturedLog implements DestinationStream {
  readonly lines: Line[] = [];

  write(chunk: string): void {
    for (const text of chunk.split('\n')) {
      if (text !== '') {
        this.lines.push(JSON.parse(text) as Line);
      }
    }
  }

  find(match: (line: Line) => boolean): Line | undefined {
    return this.lines.find(match);
  }

  /** Waits for a line the app writes after the client has seen the outcome (socket closes). */
  async waitFor(match: (line: Line) => boolean, what: string): Promise<Line> {
    await until(
      () => this.lines.some(match),
      5_000,
      () => `no log line: ${what}`,
    );
    return this.lines.find(match)!;
  }

  /** Nothing the app wrote contains `secret` (a token, a key, a password). */
  expectNowhere(secret: string): void {
    expect(this.lines.filter((l) => JSON.stringify(l).includes(secret))).toEqual([]);
  }
}

const WARN = 40;
const INFO = 30;
const requestLine = (path: string) => (l: Line) =>
  l.msg === 'request completed' && typeof l.req?.url === 'string' && l.req.url.startsWith(path);

describe('request and WebSocket log lines (LOG_LEVEL=info)', () => {
  let t: TestApp;
  const log = new CapturedLog();

  beforeAll(async () => {
    t = await startApp({ LOG_LEVEL: 'info' }, { logDestination: log });
  });

  afterAll(async () => {
    await t?.close();
  });

  it('a REST request line names its caller: user id, API key id, method; never the credential', async () => {
    const alice = await createUser(t.url);
    const { id: keyId, key } = await createApiKey(alice.client);
    await alice.client.get(`/api/v1/users/${alice.id}`);
    await client(t.url, { apiKey: key }).get(`/api/v1/api-keys/${keyId}`);

    const byToken = log.find(requestLine(`/api/v1/users/${alice.id}`));
    expect(byToken).toMatchObject({ level: INFO, user_id: alice.id, auth: 'jwt' });
    expect(byToken?.req.remoteAddress).toBe('127.0.0.1');
    expect(byToken?.request_id).toEqual(expect.any(String));
    const byKey = log.find(requestLine(`/api/v1/api-keys/${keyId}`));
    expect(byKey).toMatchObject({ user_id: alice.id, key_id: keyId, auth: 'api_key' });
    log.expectNowhere(alice.token);
    log.expectNowhere(key);
    log.expectNowhere(alice.password);
  });

  it('an OAuth request line names the client id and the user', async () => {
    const admin = await adminClient(t.url);
    const partner = await registerClient(admin);
    const bob = await createUser(t.url);
    const { redirect, verifier } = await authorize(t.url, {
      client: partner,
      email: bob.email,
      password: bob.password,
    });
    const tokens = await exchangeCode(t.url, partner, redirect.searchParams.get('code')!, verifier);
    expect(tokens.status).toBe(200);
    const res = await client(t.url, { bearer: tokens.body.access_token }).get(
      `/api/v1/users/${bob.id}`,
    );
    expect(res.status).toBe(200);
    expect(log.find(requestLine(`/api/v1/users/${bob.id}`))).toMatchObject({
      user_id: bob.id,
      client_id: partner.client_id,
      auth: 'oauth',
    });
    log.expectNowhere(tokens.body.access_token);
  });

  it('a GraphQL request line has the operation name and type and the caller', async () => {
    const alice = await createUser(t.url);
    const name = `LogProbe${unique('')}`;
    const res = await request(t.url, '/graphql?probe=1', {
      method: 'POST',
      auth: { bearer: alice.token },
      body: { query: `query ${name} { me { id } }` },
    });
    expect(res.status).toBe(200);
    expect(log.find(requestLine('/graphql?probe=1'))).toMatchObject({
      level: INFO,
      operation_name: name,
      operation_type: 'query',
      user_id: alice.id,
    });
  });

  it('WebSocket connect, subscribe, complete and close are logged with the caller and the close code', async () => {
    const alice = await createUser(t.url);
    const socket = await connect(t.url, { bearer: alice.token });
    const connected = await log.waitFor(
      (l) => l.event === 'ws_connected' && l.user_id === alice.id,
      'ws_connected',
    );
    expect(connected).toMatchObject({ level: INFO, address: '127.0.0.1', auth: 'jwt' });
    const connection = connected.connection_id as string;
    const sub = subscribe(socket, 'subscription LogWatch { newMessage { id } }');
    await log.waitFor(
      (l) => l.event === 'ws_subscribe' && l.connection_id === connection,
      'ws_subscribe',
    );
    expect(
      log.find((l) => l.event === 'ws_subscribe' && l.connection_id === connection),
    ).toMatchObject({
      operation_name: 'LogWatch',
      operation_type: 'subscription',
      user_id: alice.id,
    });
    sub.stop();
    const completed = await log.waitFor(
      (l) => l.event === 'ws_complete' && l.connection_id === connection,
      'ws_complete',
    );
    expect(completed).toMatchObject({ operation_name: 'LogWatch', outcome: 'ok', level: INFO });
    await socket.dispose();
    const closed = await log.waitFor(
      (l) => l.event === 'ws_closed' && l.connection_id === connection,
      'ws_closed',
    );
    expect(closed).toMatchObject({ level: INFO, code: 1000, user_id: alice.id });
    log.expectNowhere(alice.token);
  });
});

describe('security events (LOG_LEVEL=warn)', () => {
  let t: TestApp;
  const log = new CapturedLog();
  const REQUESTS = 25;

  beforeAll(async () => {
    t = await startApp(
      {
        LOG_LEVEL: 'warn',
        RATE_LIMIT: String(REQUESTS),
        AUTH_ACCOUNT_RATE_LIMIT: '2',
        WS_MAX_CONNECTIONS_PER_IDENTITY: '1',
        // a second presentation of a refresh token is a reuse at once (no grace window)
        REFRESH_REUSE_GRACE_S: '0',
      },
      { logDestination: log },
    );
  });

  afterAll(async () => {
    await t?.close();
  });

  it('a failed login and the lock-out that follows are warnings with the account and address', async () => {
    const carol = await createUser(t.url);
    const attempt = () =>
      request(t.url, '/api/v1/auth/token', {
        method: 'POST',
        body: { email: carol.email, password: 'wrong-password-1' },
      });
    expect((await attempt()).status).toBe(401);
    expect(log.find((l) => l.event === 'login_failed' && l.account === carol.email)).toMatchObject({
      level: WARN,
      address: '127.0.0.1',
      request_id: expect.any(String),
    });

    let status = 401;
    for (let i = 0; i < 3 && status !== 429; i++) {
      status = (await attempt()).status;
    }
    expect(status).toBe(429);
    expect(
      log.find((l) => l.event === 'credential_throttled' && l.account === carol.email),
    ).toMatchObject({ level: WARN, bucket: 'account', address: '127.0.0.1' });
    log.expectNowhere('wrong-password-1');
  });

  it('refresh-token reuse is a warning naming the user', async () => {
    const dave = await createUser(t.url);
    const pair = await request(t.url, '/api/v1/auth/token', {
      method: 'POST',
      body: { email: dave.email, password: dave.password },
    });
    const old = pair.body.refresh_token as string;
    const refresh = () =>
      request(t.url, '/api/v1/auth/refresh', { method: 'POST', body: { refresh_token: old } });
    expect((await refresh()).status).toBe(200);
    expect((await refresh()).status).toBe(401);
    expect(
      log.find((l) => l.event === 'refresh_token_reuse' && l.user_id === dave.id),
    ).toMatchObject({ level: WARN, address: '127.0.0.1', request_id: expect.any(String) });
    log.expectNowhere(old);
  });

  it('a 429 is a warning with the caller and address', async () => {
    const erin = await createUser(t.url);
    let status = 200;
    for (let i = 0; i <= REQUESTS && status !== 429; i++) {
      status = (await erin.client.get('/api/v1/auth/me')).status;
    }
    expect(status).toBe(429);
    expect(log.find((l) => l.event === 'rate_limited' && l.user_id === erin.id)).toMatchObject({
      level: WARN,
      res: { statusCode: 429 },
      req: { remoteAddress: '127.0.0.1' },
    });
  });

  it('WebSocket closes 4403 (bad credentials) and 4429 (too many) are warnings with address and caller', async () => {
    const bad = await rawSocket(t.url);
    bad.send({ type: 'connection_init', payload: { Authorization: 'Bearer not-a-token' } });
    expect((await bad.closed).code).toBe(4403);
    const refused = await log.waitFor((l) => l.event === 'ws_closed' && l.code === 4403, '4403');
    expect(refused).toMatchObject({ level: WARN, address: '127.0.0.1' });

    const frank = await createUser(t.url);
    const first = await connect(t.url, { bearer: frank.token });
    const second = await rawSocket(t.url);
    second.send({ type: 'connection_init', payload: { Authorization: `Bearer ${frank.token}` } });
    expect((await second.closed).code).toBe(4429);
    const tooMany = await log.waitFor(
      (l) => l.event === 'ws_closed' && l.code === 4429 && l.user_id === frank.id,
      '4429',
    );
    expect(tooMany).toMatchObject({ level: WARN, address: '127.0.0.1' });
    await first.dispose();
  });

  it('nothing below warn is written (while warnings are)', async () => {
    const res = await request(t.url, '/api/v1/auth/token', {
      method: 'POST',
      body: { email: `${unique()}@example.com`, password: 'not-the-password' },
    });
    expect(res.status).toBe(401);
    expect(log.find((l) => l.event === 'login_failed')).toBeDefined();
    expect(log.lines.filter((l) => l.level < WARN)).toEqual([]);
  });
});
