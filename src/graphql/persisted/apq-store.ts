import { KeyvAdapter } from '@apollo/utils.keyvadapter';
import { createKeyv } from '@keyv/redis';
import { Inject, Injectable, Logger, type OnApplicationShutdown } from '@nestjs/common';
import type Keyv from 'keyv';
import { APP_CONFIG, type AppConfig } from '../../config/config.js';

/**
 * How long a registered hash is kept (seconds). Apollo keeps its in-memory entries until the LRU
 * evicts them; in Redis they expire, so a hash unused for a day is registered again by its client
 * (one extra round trip, as after a restart).
 */
const APQ_TTL_S = 86_400;

/**
 * The store of Apollo's automatic persisted queries (APQ: `extensions.persistedQuery.sha256Hash`).
 * With REDIS_URL it is Redis, the way Apollo documents it (Keyv + `@keyv/redis` behind
 * `@apollo/utils.keyvadapter`), under REDIS_PREFIX (`<prefix>apq:<sha256>`), so a query registered
 * through one instance runs by hash on every other; without, Apollo's in-memory LRU of each instance.
 *
 * Redis trouble never fails a request: a read that fails is a miss (PERSISTED_QUERY_NOT_FOUND, and
 * the client sends the text again), a write that fails is lost; one warning per outage.
 */
@Injectable()
export class PersistedQueryStore implements OnApplicationShutdown {
  private readonly logger = new Logger('PersistedQueries');
  private readonly keyv: Keyv<string> | undefined;
  private failing = false;

  constructor(@Inject(APP_CONFIG) config: AppConfig) {
    if (!config.redisUrl) {
      return;
    }
    // createKeyv sets the namespace on both Keyv and the adapter (Keyv's own default is "keyv")
    this.keyv = createKeyv(config.redisUrl, {
      namespace: config.redisPrefix,
      keyPrefixSeparator: '',
      throwOnConnectError: false,
      throwOnErrors: false,
      connectionTimeout: 2_000,
    }) as Keyv<string>;
    const warn = (err: unknown) => {
      if (!this.failing) {
        this.failing = true;
        this.logger.warn(
          `APQ store in Redis unavailable (${err instanceof Error ? err.message : String(err)}): persisted hashes miss until it is back`,
        );
      }
    };
    this.keyv.on('error', warn);
    // Keyv re-emits its store's errors; the store (a Hookified adapter) says when it is back
    (this.keyv.store as { on(event: string, listener: () => void): void }).on('connect', () => {
      this.failing = false;
    });
  }

  /** Apollo's `persistedQueries` option: the Redis cache, or Apollo's default in-memory one. */
  apolloOption(): { cache?: KeyvAdapter<string>; ttl?: number } {
    return this.keyv ? { cache: new KeyvAdapter(this.keyv as never), ttl: APQ_TTL_S } : {};
  }

  async onApplicationShutdown(): Promise<void> {
    await this.keyv?.disconnect().catch(() => undefined);
  }
}
