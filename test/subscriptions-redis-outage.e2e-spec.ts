import {
  createServer,
  connect as tcpConnect,
  type Server,
  type Socket as TcpSocket,
} from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TOPICS } from '../src/events/events.service.js';
import { startApp, usingRedis, type TestApp } from './helpers/app.js';
import { createUser, unique, type CreatedUser } from './helpers/factories.js';
import { request, type TestResponse } from './helpers/http.js';
import { percentile, startLoad, statusCounts, type Sample } from './helpers/load.js';
import {
  privateRedisTestsRun,
  startPrivateRedis,
  type PrivateRedis,
} from './helpers/private-redis.js';
import {
  connect,
  listening,
  subscribe,
  until,
  type Socket,
  type Subscription,
} from './subscriptions-helpers.js';

/** A TCP proxy in front of Redis that the test can cut and restore (an outage without stopping Redis). */
class CuttableProxy {
  private server?: Server;
  private readonly sockets = new Set<TcpSocket>();
  port = 0;

  constructor(private readonly target: URL) {}

  async start(port = 0): Promise<void> {
    this.server = createServer((client) => {
      const upstream = tcpConnect(Number(this.target.port || 6379), this.target.hostname);
      for (const s of [client, upstream]) {
        this.sockets.add(s);
        s.on('close', () => this.sockets.delete(s));
        s.on('error', () => s.destroy());
      }
      client.pipe(upstream).pipe(client);
    });
    await new Promise<void>((resolve) => this.server!.listen(port, '127.0.0.1', resolve));
    this.port = (this.server.address() as { port: number }).port;
  }

  /** Drops every connection and refuses new ones until `start(sameport)`. */
  async cut(): Promise<void> {
    for (const s of this.sockets) {
      s.destroy();
    }
    await new Promise<void>((resolve) => this.server?.close(() => resolve()));
  }

  get connections(): number {
    return this.sockets.size;
  }
}

/**
 * A new room of `owner` and a live subscription of `socket` to the contents of its messages (the app
 * has subscribed to the room's topic when this resolves).
 */
async function roomSubscription(
  t: TestApp,
  owner: CreatedUser,
  socket: Socket,
  namePrefix: string,
): Promise<{ room: string; sub: Subscription<{ messageAdded: { content: string } }> }> {
  const room = (await owner.client.post('/api/v1/rooms', { name: unique(namePrefix) })).body.data
    .id as string;
  const sub = subscribe<{ messageAdded: { content: string } }>(
    socket,
    'subscription($r: ID!) { messageAdded(roomId: $r) { content } }',
    { r: room },
  );
  await listening(t, TOPICS.messageAdded(room));
  return { room, sub };
}

describe.skipIf(!usingRedis)(
  usingRedis
    ? 'Redis outage and reconnect of the event bus'
    : 'Redis outage: skipped, needs REDIS_URL',
  () => {
    let proxy: CuttableProxy;
    let t: TestApp;
    let user: CreatedUser;
    let socket: Socket;

    beforeAll(async () => {
      const target = new URL(process.env.REDIS_URL!);
      proxy = new CuttableProxy(target);
      await proxy.start();
      const viaProxy = new URL(target);
      viaProxy.hostname = '127.0.0.1';
      viaProxy.port = String(proxy.port);
      t = await startApp({
        REDIS_URL: viaProxy.toString(),
        REDIS_PREFIX: `atrium-test:${unique('out')}:`,
      });
      user = await createUser(t.url);
      socket = await connect(t.url, { bearer: user.token });
    });
    afterAll(async () => {
      await socket?.dispose();
      await t?.close();
      await proxy?.cut();
    });

    it('keeps serving during an outage (the message sent meanwhile is delivered at most once, in order) and resubscribes after it', async () => {
      const { room, sub } = await roomSubscription(t, user, socket, 'outage-');
      const send = (content: string) =>
        user.client.post(`/api/v1/rooms/${room}/messages`, { content });

      expect((await send('before')).status).toBe(201);
      await sub.waitFor(1);

      const port = proxy.port;
      await proxy.cut();
      const started = Date.now();
      const during = await send('during');
      expect(during.status).toBe(201); // the message is committed; only its event is lost
      expect(Date.now() - started).toBeLessThan(3_000); // the publisher gives up quickly

      await proxy.start(port);
      // the bus connections come back (ioredis retries every <= 2 s) and re-subscribe
      await until(
        () => proxy.connections >= 4,
        10_000,
        () => `${proxy.connections} proxied sockets`,
      );
      // the first send after the re-subscription is delivered: send, wait briefly for its event, repeat
      let delivered = false;
      for (let attempt = 0; attempt < 20 && !delivered; attempt++) {
        expect((await send(`after ${attempt}`)).status).toBe(201);
        delivered = await until(
          () => sub.events.some((e) => String(e.messageAdded.content).startsWith('after')),
          300,
        ).then(
          () => true,
          () => false,
        );
      }
      expect(delivered).toBe(true);
      const contents = sub.events.map((e) => e.messageAdded.content);
      expect(contents[0]).toBe('before');
      // at most once, never out of order: 'during' may be lost (or, if the publisher's queue held it,
      // delivered once) but never after a later message
      const iDuring = contents.indexOf('during');
      expect(contents.filter((c) => c === 'during').length).toBeLessThanOrEqual(1);
      if (iDuring >= 0) {
        expect(iDuring).toBe(1);
      }
      const listed = (
        await user.client.get(`/api/v1/rooms/${room}/messages?limit=100`)
      ).body.data.map((m: { content: string }) => m.content);
      expect(listed.slice(0, 2)).toEqual(['before', 'during']);
    }, 40_000);
  },
);

/**
 * Redis itself killed (SIGKILL) and restarted empty while requests, message sends and a subscription
 * are running, on a private redis-server (the shared one is never touched). As documented in
 * docs/rate-limits.md and docs/realtime.md: requests keep being answered (the limiter fails open: no
 * 429, no RateLimit-* headers), writes still commit (their events are lost, not queued), the socket and
 * its subscription stay open; after the restart the limiter counts and refuses again and events are
 * delivered again, in commit order, without restarting the app.
 * Locally a missing redis-server skips this block; in CI (CI set) it fails instead.
 */
describe.skipIf(!usingRedis || !privateRedisTestsRun)(
  usingRedis
    ? 'Redis killed and restarted under load (private redis-server; skipped outside CI without it)'
    : 'Redis killed and restarted under load: skipped, needs REDIS_URL (the PostgreSQL + Redis run)',
  () => {
    let redis: PrivateRedis;
    let t: TestApp;
    let poster: CreatedUser;
    let reader: CreatedUser;
    let socket: Socket;

    beforeAll(async () => {
      redis = await startPrivateRedis();
      // the request limit stays out of the way of the load; the credential bucket (5 failed checks
      // per address) is the limit this test sees refusing again after the restart
      t = await startApp({
        REDIS_URL: redis.url,
        AUTH_RATE_LIMIT: '5',
        AUTH_RATE_LIMIT_WINDOW_S: '60',
      });
      poster = await createUser(t.url);
      reader = await createUser(t.url);
      socket = await connect(t.url, { bearer: reader.token });
    });
    afterAll(async () => {
      await socket?.dispose();
      await t?.close();
      await redis?.kill();
    });

    /** A wrong password for `email`: 401 while counted under the limit, 429 once refused. */
    const guess = (email: string) =>
      request(t.url, '/api/v1/auth/token', {
        method: 'POST',
        body: { email, password: 'wrong-password-123' },
      });

    it('keeps answering (limits open, sends committed), keeps the subscription, and limits and delivers again after the restart', async () => {
      const { room, sub } = await roomSubscription(t, poster, socket, 'load-');
      let sent = 0;
      // one sender (its contents are in commit order), three readers
      const load = startLoad(4, (w) => {
        if (w === 0) {
          const content = `m${sent++}`;
          return {
            kind: 'send',
            send: () => poster.client.post(`/api/v1/rooms/${room}/messages`, { content }),
          };
        }
        return { kind: 'read', send: () => reader.client.get('/api/v1/users?limit=5') };
      });
      const index = (e: { messageAdded: { content: string } }) =>
        Number(e.messageAdded.content.slice(1));
      let outage: Sample[];
      let up: number;
      let recoveredAfter: number;
      try {
        await sub.waitFor(5);

        await redis.kill();
        const down = performance.now();
        await load.until(
          (s) => s.filter((x) => x.started >= down && x.kind === 'send').length >= 4,
          10_000,
          '4 sends during the outage',
        );
        expect((await fetch(`${t.url}/health/ready`)).status).toBe(503);
        const email = (await createUserQuietly()).email;
        expect((await guess(email)).status).toBe(401);
        outage = load.between(down, performance.now());

        await redis.start();
        up = performance.now();
        // the bus re-subscribes by itself: an event posted after the restart arrives
        const sentAtRestart = sent;
        await until(
          () => sub.events.some((e) => index(e) >= sentAtRestart),
          10_000,
          () => `no event after m${sentAtRestart}; ${sub.events.length} events`,
        );
        recoveredAfter = performance.now() - up;
        // and the limiter counts again
        await load.until(
          (s) => s.some((x) => x.started >= up && x.res?.headers.has('ratelimit-limit')),
          10_000,
          'RateLimit headers after the restart',
        );
      } finally {
        await load.stop();
      }

      // nothing but 200/201 (no 5xx, no 429) at any time; during the outage without RateLimit-* headers
      expect(statusCounts(load.samples)).toEqual({
        200: load.samples.filter((s) => s.kind === 'read').length,
        201: load.samples.filter((s) => s.kind === 'send').length,
      });
      const duringOutage = outage.filter((s) => s.kind === 'read');
      expect(duringOutage.length).toBeGreaterThan(0);
      expect(duringOutage.filter((s) => s.res!.headers.has('ratelimit-limit'))).toEqual([]);
      const sendMs = outage.filter((s) => s.kind === 'send').map((s) => s.ended - s.started);
      const readMs = duringOutage.map((s) => s.ended - s.started);
      // bounded waits, not hangs (generous: the machine is shared): a send waits for its event's
      // publish at most the publisher's 500 ms command timeout; a read does not wait for Redis at all
      expect(percentile(sendMs, 100)).toBeLessThan(2_500);
      expect(percentile(readMs, 99)).toBeLessThan(1_000);

      // the subscription was never closed; its events are in commit order, none twice
      expect(sub.completed).toBe(false);
      expect(sub.errors).toEqual([]);
      const seen = sub.events.map(index);
      expect(seen).toEqual([...seen].sort((a, b) => a - b));
      expect(new Set(seen).size).toBe(seen.length);
      // every send answered 201 is in the room
      const listed = new Set<string>();
      let next: string | undefined = `/api/v1/rooms/${room}/messages?limit=100`;
      while (next) {
        const page: TestResponse = await poster.client.get(next);
        for (const m of page.body.data as { content: string }[]) {
          listed.add(m.content);
        }
        next = /<[^>]*(\/api\/v1\/[^>]+)>; rel="next"/.exec(page.headers.get('link') ?? '')?.[1];
      }
      const acknowledged = load.samples.filter((s) => s.kind === 'send').length;
      expect(listed.size).toBe(acknowledged);

      // the credential bucket refuses again: 5 failed checks counted, the 6th refused
      const email = (await createUserQuietly()).email;
      const statuses = [];
      for (let i = 0; i < 6; i++) {
        statuses.push((await guess(email)).status);
      }
      expect(statuses).toEqual([401, 401, 401, 401, 401, 429]);
      console.info(
        `Redis restart: ${outage.length} answers during the outage; send p50 ${percentile(sendMs, 50).toFixed(0)} ms / max ${percentile(sendMs, 100).toFixed(0)} ms, read p99 ${percentile(readMs, 99).toFixed(1)} ms; first event after the restart ${recoveredAfter.toFixed(0)} ms after redis-server was ready; ${sub.events.length}/${acknowledged} events delivered`,
      );
    }, 60_000);

    /** A user whose password the test guesses (created by the admin, so no address bucket is spent). */
    async function createUserQuietly() {
      return createUser(t.url);
    }
  },
);
