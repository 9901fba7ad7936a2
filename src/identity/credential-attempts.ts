/**
 * The failed-credential accounting the credential door needs (docs/rate-limits.md, "Failed
 * credentials"). auth/ declares it and the rate limiter implements it (src/rate-limit/
 * credential-buckets.ts), so auth/ never imports rate-limit/.
 */

import type { MaybeCaller } from './caller.js';

/** A refusal by a credential bucket: answer 429 with these numbers (RateLimit-*, Retry-After). */
export interface CredentialThrottle {
  limit: number;
  count: number;
  resetMs: number;
  /** Which bucket refused: the client address's, or the target account's (a lock-out). */
  bucket?: 'address' | 'account';
}

/** A request bucket after counting one request: answer 429 when not `allowed`. */
export interface RequestCount extends CredentialThrottle {
  allowed: boolean;
}

export abstract class CredentialAttempts {
  /**
   * A request the door's adapters refuse themselves (401 without credentials, 403 for the role)
   * still spends one request from the caller's (or the address's) request bucket: refusals are not
   * free. Undefined when nothing was counted (limits off, counter store unavailable).
   */
  abstract refusedRequest(
    caller: MaybeCaller,
    address: string | undefined,
  ): Promise<RequestCount | undefined>;

  /**
   * Before a password is checked (argon2 is expensive and a check is a guess): undefined = check
   * it; else refuse it unchecked. `account` is the normalized email the password is for.
   */
  abstract beforePassword(
    account: string,
    address: string | undefined,
  ): Promise<CredentialThrottle | undefined>;

  /**
   * A presented credential was wrong: counted against the address (and the account, for
   * passwords). The throttle when the address is now over its budget (answer 429, not 401).
   */
  abstract failed(
    address: string | undefined,
    account?: string,
  ): Promise<CredentialThrottle | undefined>;
}

/** No accounting (an application without the rate limiter). */
export class NoCredentialAttempts extends CredentialAttempts {
  refusedRequest(): Promise<undefined> {
    return Promise.resolve(undefined);
  }

  beforePassword(): Promise<undefined> {
    return Promise.resolve(undefined);
  }

  failed(): Promise<undefined> {
    return Promise.resolve(undefined);
  }
}
