import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import {
  MemoryRateLimitStore,
  RedisRateLimitStore,
  type RateLimitStore,
} from './rate-limit.store.js';

const redisUrl = process.env.REDIS_URL;
const clients: Redis[] = [];

const stores: [string, () => Promise<RateLimitStore>][] = [
  ['in-process', () => Promise.resolve(new MemoryRateLimitStore())],
];
if (redisUrl) {
  stores.push([
    'Redis',
    async () => {
      const client = new Redis(redisUrl, {
        maxRetriesPerRequest: 0,
        enableOfflineQueue: false,
        commandTimeout: 100,
      });
      clients.push(client);
      const store = new RedisRateLimitStore(client);
      await store.onModuleInit();
      return store;
    },
  ]);
}

afterAll(async () => {
  await Promise.all(clients.map((c) => c.quit()));
});

describe.each(stores)('%s rate-limit store', (_name, make) => {
  const key = () => `atrium-test:${randomBytes(4).toString('hex')}:rl:spec`;

  it('adds up to the limit, refuses without adding, and reports the window', async () => {
    const store = await make();
    const k = key();
    expect(await store.hit(k, 2, 5, 10_000)).toMatchObject({ count: 2, allowed: true });
    expect(await store.hit(k, 3, 5, 10_000)).toMatchObject({ count: 5, allowed: true });
    const refused = await store.hit(k, 1, 5, 10_000);
    expect(refused).toMatchObject({ count: 5, allowed: false });
    expect(refused!.resetMs).toBeGreaterThan(9_000);
    expect(refused!.resetMs).toBeLessThanOrEqual(10_000);
    expect(await store.hit(k, 0, 5, 10_000)).toMatchObject({ count: 5, allowed: true }); // a read
  });

  it('reads an empty counter without creating it, and starts a new window after the old one', async () => {
    const store = await make();
    const k = key();
    expect(await store.hit(k, 0, 5, 200)).toMatchObject({ count: 0, allowed: true });
    expect(await store.hit(k, 5, 5, 200)).toMatchObject({ count: 5, allowed: true });
    await new Promise((resolve) => setTimeout(resolve, 250));
    expect(await store.hit(k, 1, 5, 200)).toMatchObject({ count: 1, allowed: true });
  });

  it('reads and adds several counters in one step (peek, addAll)', async () => {
    const store = await make();
    const [a, b] = [key(), key()];
    expect(await store.peek([a, b], 10_000)).toEqual([
      { count: 0, resetMs: 10_000 },
      { count: 0, resetMs: 10_000 },
    ]);
    await store.addAll([a, b], 1, 10_000);
    const added = await store.addAll([a, b], 2, 10_000);
    expect(added?.map((w) => w.count)).toEqual([3, 3]);
    await store.addAll([b], 1, 10_000);
    const read = await store.peek([a, b], 10_000);
    expect(read?.map((w) => w.count)).toEqual([3, 4]);
    expect(read![0].resetMs).toBeGreaterThan(9_000);
    expect(read![0].resetMs).toBeLessThanOrEqual(10_000);
  });

  it('stays exact under concurrent hits', async () => {
    const store = await make();
    const k = key();
    const results = await Promise.all(
      Array.from({ length: 50 }, () => store.hit(k, 1, 20, 10_000)),
    );
    expect(results.filter((r) => r?.allowed)).toHaveLength(20);
    expect(await store.hit(k, 0, 20, 10_000)).toMatchObject({ count: 20 });
  });
});
