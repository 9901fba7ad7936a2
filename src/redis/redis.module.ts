import {
  Global,
  Inject,
  Injectable,
  Logger,
  Module,
  type OnApplicationShutdown,
} from '@nestjs/common';
import { Redis, type RedisOptions } from 'ioredis';
import { APP_CONFIG, type AppConfig } from '../config/config.js';

/**
 * Redis clients, only when REDIS_URL is set. Commands fail fast while Redis is down (no 73 s of
 * retries, no offline queue: ioredis' defaults would queue commands and retry each ~20 times); the
 * connection itself keeps reconnecting.
 */
@Injectable()
export class RedisConnections implements OnApplicationShutdown {
  private readonly logger = new Logger('Redis');
  private readonly clients: Redis[] = [];
  private downSince: number | undefined;

  constructor(@Inject(APP_CONFIG) private readonly config: AppConfig) {}

  get enabled(): boolean {
    return this.config.redisUrl !== undefined;
  }

  /** A new client (pub/sub needs dedicated connections). Closed with the application. */
  create(name: string, overrides: RedisOptions = {}): Redis {
    if (!this.config.redisUrl) {
      throw new Error('REDIS_URL is not set');
    }
    const client = new Redis(this.config.redisUrl, {
      connectionName: `atrium-${name}`,
      commandTimeout: this.config.redisCommandTimeoutMs,
      connectTimeout: 2_000,
      maxRetriesPerRequest: 0,
      enableOfflineQueue: false,
      retryStrategy: (times) => Math.min(times * 200, 2_000),
      ...overrides,
    });
    client.on('error', (err: Error) => {
      // one warning per outage, not one per reconnect attempt
      if (this.downSince === undefined) {
        this.downSince = Date.now();
        this.logger.warn(`Redis unavailable (${err.message}); retrying in the background`);
      }
    });
    client.on('ready', () => {
      if (this.downSince !== undefined) {
        this.logger.log(`Redis is back after ${Date.now() - this.downSince} ms`);
        this.downSince = undefined;
      }
    });
    this.clients.push(client);
    return client;
  }

  /** Names of the application's clients that are not connected now (an outage, or still connecting). */
  notReady(): string[] {
    return this.clients
      .filter((c) => c.status !== 'ready' && c.status !== 'end')
      .map((c) => c.options.connectionName ?? 'redis');
  }

  /** QUIT when connected (bounded to 1 s); a client that is not connected is just dropped. */
  async onApplicationShutdown(): Promise<void> {
    await Promise.all(
      this.clients.map(async (c) => {
        if (c.status !== 'ready') {
          c.disconnect();
          return;
        }
        const timer = setTimeout(() => c.disconnect(), 1_000);
        try {
          await c.quit();
        } catch {
          c.disconnect();
        } finally {
          clearTimeout(timer);
        }
      }),
    );
  }
}

/**
 * Resolves true once `client` is ready, false as soon as its first connection attempt fails (refused,
 * reset, or `connectTimeout` spent) or after `maxWaitMs`. Boot-time waits use it, so that a Redis
 * that is down costs one failed connection attempt, not the whole wait. A client whose first attempt
 * already failed (it is waiting to reconnect) answers false at once, not after its next attempt.
 */
export function firstConnection(client: Redis, maxWaitMs: number): Promise<boolean> {
  if (client.status === 'ready') {
    return Promise.resolve(true);
  }
  if (client.status === 'reconnecting' || client.status === 'close' || client.status === 'end') {
    return Promise.resolve(false);
  }
  return new Promise<boolean>((resolve) => {
    const finish = (ok: boolean) => {
      clearTimeout(timer);
      client.off('ready', onReady);
      client.off('error', onFailure);
      client.off('close', onFailure);
      resolve(ok);
    };
    const onReady = () => finish(true);
    const onFailure = () => finish(false);
    const timer = setTimeout(onFailure, maxWaitMs);
    timer.unref();
    client.once('ready', onReady);
    client.once('error', onFailure);
    client.once('close', onFailure);
  });
}

@Global()
@Module({ providers: [RedisConnections], exports: [RedisConnections] })
export class RedisModule {}
