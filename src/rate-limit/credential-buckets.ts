import { createHash } from 'node:crypto';
import { Inject, Injectable } from '@nestjs/common';
import type { MaybeCaller } from '../identity/caller.js';
import {
  CredentialAttempts,
  type CredentialThrottle,
  type RequestCount,
} from '../identity/credential-attempts.js';
import { APP_CONFIG, type AppConfig } from '../config/config.js';
import { BUCKET_AUTH, RateLimitService } from './rate-limit.service.js';
import type { WindowState } from './rate-limit.store.js';

/** Counter name of the per-account bucket: `<prefix>rl:auth-account:<sha256(email)>`. */
const BUCKET_AUTH_ACCOUNT = 'auth-account';

/**
 * The credential buckets (docs/rate-limits.md, "Failed credentials"): failed checks per client
 * address (AUTH_RATE_LIMIT) and failed password checks per target account (AUTH_ACCOUNT_RATE_LIMIT),
 * in one window (AUTH_RATE_LIMIT_WINDOW_S). They only ever count and refuse *failed* or *unchecked*
 * credentials: a credential that verifies is never refused by them.
 *
 * - A password (Basic, POST /auth/token) is checked unless its account's bucket is used up, or its
 *   address has failed AUTH_ADDRESS_HARD_LIMIT times; then 429 without running argon2, right or
 *   wrong alike (one read of both counters: one round trip).
 * - A failed check adds one to the address (and the account, for a password): one round trip; past
 *   the address's (or account's) budget the answer is 429 instead of 401.
 * - Bearer tokens and API keys that verify never touch these counters.
 * Fails open (no counting, no refusal) while the counter store is unavailable, like every limit.
 */
@Injectable()
export class CredentialBuckets extends CredentialAttempts {
  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly limits: RateLimitService,
  ) {
    super();
  }

  private get windowMs(): number {
    return this.config.authRateLimitWindowS * 1000;
  }

  private addressKey(address: string | undefined): string {
    return this.limits.key(BUCKET_AUTH, this.limits.ipTracker(address));
  }

  /** Emails are not kept in the counter store: the key is a hash of the normalized address. */
  accountKey(account: string): string {
    const digest = createHash('sha256').update(account.trim().toLowerCase()).digest('hex');
    return this.limits.key(BUCKET_AUTH_ACCOUNT, digest.slice(0, 32));
  }

  async refusedRequest(
    caller: MaybeCaller,
    address: string | undefined,
  ): Promise<RequestCount | undefined> {
    const hit = await this.limits.countRefusedRequest(caller, address);
    return hit && { limit: this.limits.requestLimit, ...hit };
  }

  async beforePassword(
    account: string,
    address: string | undefined,
  ): Promise<CredentialThrottle | undefined> {
    if (!this.limits.enabled) {
      return undefined;
    }
    const states = await this.limits.store.peek(
      [this.addressKey(address), this.accountKey(account)],
      this.windowMs,
    );
    const [byAddress, byAccount] = states ?? [];
    if (byAccount && byAccount.count >= this.config.authAccountRateLimit) {
      this.limits.record(BUCKET_AUTH_ACCOUNT, { allowed: false });
      return throttle(this.config.authAccountRateLimit, byAccount, 'account');
    }
    if (byAddress && byAddress.count >= this.config.authAddressHardLimit) {
      this.limits.record(BUCKET_AUTH, { allowed: false });
      return throttle(this.config.authRateLimit, byAddress, 'address');
    }
    return undefined;
  }

  async failed(
    address: string | undefined,
    account?: string,
  ): Promise<CredentialThrottle | undefined> {
    if (!this.limits.enabled) {
      return undefined;
    }
    const keys = [this.addressKey(address)];
    if (account !== undefined) {
      keys.push(this.accountKey(account));
    }
    const states = await this.limits.store.addAll(keys, 1, this.windowMs);
    const [byAddress, byAccount] = states ?? [];
    if (byAccount && byAccount.count > this.config.authAccountRateLimit) {
      this.limits.record(BUCKET_AUTH_ACCOUNT, { allowed: false });
      return throttle(this.config.authAccountRateLimit, byAccount, 'account');
    }
    if (byAddress && byAddress.count > this.config.authRateLimit) {
      this.limits.record(BUCKET_AUTH, { allowed: false });
      return throttle(this.config.authRateLimit, byAddress, 'address');
    }
    // the failed check was counted and is answered 401 (or nothing was counted: store unavailable)
    this.limits.record(BUCKET_AUTH, states && { allowed: true });
    return undefined;
  }
}

function throttle(
  limit: number,
  state: WindowState,
  bucket: CredentialThrottle['bucket'],
): CredentialThrottle {
  return { limit, count: state.count, resetMs: state.resetMs, bucket };
}
