import { createServer, connect as tcpConnect, type Server, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApp, usingRedis, type TestApp } from './helpers/app.js';
import { request } from './helpers/http.js';

/** A TCP proxy in front of Redis the test can cut (connections dropped) or freeze (bytes held). */
class RedisProxy {
  private server?: Server;
  private readonly sockets = new Set<Socket>();
  frozen = false;
  port = 0;

  constructor(private readonly target: URL) {}

  async start(port = 0): Promise<void> {
    this.server = createServer((client) => {
      const upstream = tcpConnect(Number(this.target.port || 6379), this.target.hostname);
      for (const [from, to] of [
        [client, upstream],
        [upstream, client],
      ] as const) {
        this.sockets.add(from);
        from.on('close', () => this.sockets.delete(from));
        from.on('error', () => from.destroy());
        from.on('data', (chunk: Buffer) => {
          if (!this.frozen) {
            to.write(chunk);
          }
        });
        from.on('close', () => to.destroy());
      }
    });
    await new Promise<void>((resolve) => this.server!.listen(port, '127.0.0.1', resolve));
    this.port = (this.server.address() as { port: number }).port;
  }

  async cut(): Promise<void> {
    for (const s of this.sockets) {
      s.destroy();
    }
    await new Promise<void>((resolve) => this.server?.close(() => resolve()));
  }
}

async function ready(t: TestApp) {
  const res = await request(t.url, '/health/ready');
  return { status: res.status, redis: res.body?.details?.redis?.status as string | undefined, body: res.body };
}

describe.skipIf(!usingRedis)('readiness follows Redis (through a proxy the test controls)', () => {
  let proxy: RedisProxy;
  let t: TestApp;

  beforeAll(async () => {
    const target = new URL(process.env.REDIS_URL!);
    proxy = new RedisProxy(target);
    await proxy.start();
    const via = new URL(target);
    via.hostname = '127.0.0.1';
    via.port = String(proxy.port);
    t = await startApp({ REDIS_URL: via.toString() });
  });
  afterAll(async () => {
    await t?.close();
    await proxy.cut();
  });

  it('reports up, then down when Redis stops answering, then down when it is gone', async () => {
    const before = await ready(t);
    console.log(JSON.stringify(before.body));
    proxy.frozen = true;
    const frozen = await ready(t);
    console.log(JSON.stringify(frozen.body));
    proxy.frozen = false;
    await proxy.cut();
    const cut = await ready(t);
    console.log(JSON.stringify(cut.body));
    const cut2 = await ready(t);
    console.log(JSON.stringify(cut2.body));
  });
});
