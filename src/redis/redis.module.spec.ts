import { createServer } from 'node:net';
import { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { firstConnection } from './redis.module.js';

/** A local port with nothing listening on it (connections refused). */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

describe('firstConnection', () => {
  let client: Redis | undefined;
  afterEach(() => client?.disconnect());

  function refused(port: number): Redis {
    // the application's reconnect schedule: 200 ms, 400 ms, ... up to 2 s
    client = new Redis(`redis://127.0.0.1:${port}`, {
      retryStrategy: (times) => Math.min(times * 200, 2_000),
      maxRetriesPerRequest: 0,
      enableOfflineQueue: false,
    });
    client.on('error', () => undefined);
    return client;
  }

  it('answers false when the first attempt is refused', async () => {
    const c = refused(await closedPort());
    await expect(firstConnection(c, 5_000)).resolves.toBe(false);
  });

  it('answers false at once when the first attempt was refused before it was asked', async () => {
    const c = refused(await closedPort());
    await new Promise((resolve) => c.once('close', resolve));
    const asked = performance.now();
    await expect(firstConnection(c, 5_000)).resolves.toBe(false);
    // not after the next attempt (200 ms later, then 400 ms...)
    expect(performance.now() - asked).toBeLessThan(50);
  });

  it.runIf(process.env.REDIS_URL)('answers true once connected (needs REDIS_URL)', async () => {
    client = new Redis(process.env.REDIS_URL!, { maxRetriesPerRequest: 0 });
    await expect(firstConnection(client, 5_000)).resolves.toBe(true);
  });
});
