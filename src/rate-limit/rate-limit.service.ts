import { Inject, Injectable } from '@nestjs/common';
import { normalizeIp } from '@nestjs/throttler';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { identityOf, type MaybeCaller } from '../auth/caller.js';
import { DomainError } from '../common/errors.js';
import { APP_CONFIG, type AppConfig } from '../config/config.js';
import { RateLimitStore, type Gate, type HitResult } from './rate-limit.store.js';

/** Counter names (the middle part of the Redis key `<prefix>rl:<bucket>:<tracker>`). */
export const BUCKET_REQUESTS = 'default';
export const BUCKET_AUTH = 'auth';
export const BUCKET_GRAPHQL_COST = 'cost';

/** Routes whose every request counts against the per-IP auth bucket (and only that bucket). */
export const CREDENTIAL_ROUTES = new Set([
  '/api/v1/auth/token',
  '/api/v1/auth/refresh',
  '/api/v1/auth/register',
]);

export const TOO_MANY_FAILURES = 'Too many failed credential checks from this address';

export type HeaderSink = (name: string, value: string) => void;

type Request = FastifyRequest & { caller?: MaybeCaller };

/** Seconds until `resetMs` has passed, never 0 (a client told "retry in 0 s" retries at once). */
export function secondsUntil(resetMs: number): number {
  return Math.max(1, Math.ceil(resetMs / 1000));
}

/** The `RateLimit-*` headers of one counter. */
export function writeRateLimitHeaders(sink: HeaderSink, limit: number, hit: HitResult): void {
  sink('RateLimit-Limit', String(limit));
  sink('RateLimit-Remaining', String(Math.max(0, limit - hit.count)));
  sink('RateLimit-Reset', String(secondsUntil(hit.resetMs)));
}

export function rateLimitedError(resetMs: number, what = 'Too many requests'): DomainError {
  return new DomainError('rate_limited', `${what}; retry in ${secondsUntil(resetMs)} s`);
}

export function replySink(reply: FastifyReply): HeaderSink {
  return (name, value) => void reply.header(name, value);
}

/**
 * The rate-limit rules of docs/contract.md section 9 on top of the counter store, for the three places that
 * count: the throttler guard (REST), the Apollo plugin (GraphQL over HTTP) and the auth guard
 * (failed credential checks).
 */
@Injectable()
export class RateLimitService {
  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    readonly store: RateLimitStore,
  ) {}

  get enabled(): boolean {
    return this.config.rateLimitEnabled;
  }

  key(bucket: string, tracker: string): string {
    return `${this.config.redisPrefix}rl:${bucket}:${tracker}`;
  }

  /** `ip:<address>`; IPv6 addresses by /64 (one host usually owns the whole subnet). */
  ipTracker(ip: string | undefined): string {
    return `ip:${normalizeIp(ip ?? 'unknown')}`;
  }

  /**
   * The identity a request counts against: the caller's (`user:`, `key:` or `client:`, see
   * `identityOf`) when authenticated, else the client address. `req.ip` honours X-Forwarded-For only
   * from TRUSTED_PROXIES (Fastify's `trustProxy`, set in app.factory.ts).
   */
  trackerOf(caller: MaybeCaller, ip: string | undefined): string {
    return caller ? identityOf(caller) : this.ipTracker(ip);
  }

  hit(
    bucket: string,
    tracker: string,
    amount: number,
    limit: number,
    windowS: number,
    gate?: Gate,
  ): Promise<HitResult | undefined> {
    return this.store.hit(this.key(bucket, tracker), amount, limit, windowS * 1000, gate);
  }

  /** The client address's auth bucket as a gate: a request whose credentials were checked counts only below it. */
  authGate(ip: string | undefined): Gate {
    return { key: this.key(BUCKET_AUTH, this.ipTracker(ip)), limit: this.config.authRateLimit };
  }

  /** Headers and the error of a request refused by the auth gate (see `authGate`). */
  refuseGated(reply: FastifyReply, hit: HitResult): DomainError {
    const sink = replySink(reply);
    writeRateLimitHeaders(sink, this.config.authRateLimit, hit);
    sink('Retry-After', String(secondsUntil(hit.resetMs)));
    return rateLimitedError(hit.resetMs, TOO_MANY_FAILURES);
  }

  /**
   * Before credentials are verified (argon2 is expensive): the auth bucket of the client address
   * when it is used up (the request is to be refused), else undefined. Only reads the counter;
   * `recordFailedCredentials` spends it.
   */
  async credentialChecksBlocked(ip: string | undefined): Promise<HitResult | undefined> {
    if (!this.enabled) {
      return undefined;
    }
    const limit = this.config.authRateLimit;
    const hit = await this.hit(
      BUCKET_AUTH,
      this.ipTracker(ip),
      0,
      limit,
      this.config.authRateLimitWindowS,
    );
    return hit && hit.count >= limit ? hit : undefined;
  }

  get authRateLimit(): number {
    return this.config.authRateLimit;
  }

  /**
   * REST, before the auth guard checks credentials: `credentialChecksBlocked` as a 429 with the auth
   * bucket's headers, for Basic credentials (argon2 is expensive to run for a guesser). Bearer and
   * API-key checks are cheap: they run, and the bucket is read together with the request count
   * (RateLimitGuard, one Redis call) or on failure (`failedCredentials`), with the same answers.
   */
  async assertCredentialChecksAllowed(req: Request, reply: FastifyReply): Promise<void> {
    if (!/^basic /i.test(req.headers.authorization ?? '')) {
      return;
    }
    const blocked = await this.credentialChecksBlocked(req.ip);
    if (blocked) {
      throw this.refuseGated(reply, blocked);
    }
  }

  /**
   * REST: a 401 from Basic, Bearer or API-key credentials adds one to the address's auth bucket;
   * beyond the bucket the answer is 429, as for right credentials (a guesser learns nothing).
   */
  async failedCredentials(req: Request, reply: FastifyReply): Promise<void> {
    if (!this.enabled) {
      return;
    }
    const limit = this.config.authRateLimit;
    const hit = await this.hit(
      BUCKET_AUTH,
      this.ipTracker(req.ip),
      1,
      Number.MAX_SAFE_INTEGER,
      this.config.authRateLimitWindowS,
    );
    if (hit && hit.count > limit) {
      throw this.refuseGated(reply, hit);
    }
  }

  /**
   * One request against the caller's (or the address's) request bucket, for requests the auth
   * guard refuses itself (401 without credentials, 403 for the role) before the throttler guard
   * would count them: refusals are not free. 429 instead once the bucket is used up.
   */
  async countRefusedRequest(req: Request, reply: FastifyReply): Promise<void> {
    if (!this.enabled) {
      return;
    }
    const limit = this.config.rateLimit;
    const gate = req.caller ? this.authGate(req.ip) : undefined;
    const hit = await this.hit(
      BUCKET_REQUESTS,
      this.trackerOf(req.caller, req.ip),
      1,
      limit,
      this.config.rateLimitWindowS,
      gate,
    );
    if (hit?.gated) {
      throw this.refuseGated(reply, hit);
    }
    if (hit) {
      const sink = replySink(reply);
      writeRateLimitHeaders(sink, limit, hit);
      if (!hit.allowed) {
        sink('Retry-After', String(secondsUntil(hit.resetMs)));
        throw rateLimitedError(hit.resetMs);
      }
    }
  }

  /** A 401 from Basic, Bearer or API-key credentials: one more hit on the address's auth bucket. */
  async recordFailedCredentials(ip: string | undefined): Promise<void> {
    if (!this.enabled) {
      return;
    }
    await this.hit(
      BUCKET_AUTH,
      this.ipTracker(ip),
      1,
      Number.MAX_SAFE_INTEGER,
      this.config.authRateLimitWindowS,
    );
  }
}
