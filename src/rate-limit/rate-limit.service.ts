import { Inject, Injectable } from '@nestjs/common';
import { identityOf, type MaybeCaller } from '../identity/caller.js';
import { APP_CONFIG, type AppConfig } from '../config/config.js';
import { MetricsService } from '../metrics/metrics.service.js';
import { normalizeIp } from './ip.js';
import { RateLimitStore, type HitResult } from './rate-limit.store.js';

/** Counter names (the middle part of the Redis key `<prefix>rl:<bucket>:<tracker>`). */
export const BUCKET_REQUESTS = 'default';
export const BUCKET_AUTH = 'auth';
export const BUCKET_GRAPHQL_COST = 'cost';

/**
 * Routes whose every request counts against the per-IP auth bucket (and only that bucket): sign-up.
 * `POST /auth/token` and `/auth/refresh` are not: only their *failed* checks count, in the
 * credential door (src/identity/credentials.service.ts, docs/rate-limits.md), so valid credentials are
 * never refused by the bucket.
 */
export const CREDENTIAL_ROUTES = new Set(['/api/v1/auth/register']);

export {
  rateLimitedError,
  replySink,
  secondsUntil,
  writeRateLimitHeaders,
  type HeaderSink,
} from '../common/rate-limit-headers.js';

/**
 * The rate-limit rules of docs/contract.md section 9 on top of the counter store, for the places
 * that count: the request guard (REST), the Apollo plugin (GraphQL over HTTP), the WebSocket
 * limits and the credential buckets (credential-buckets.ts, the credential door's accounting).
 */
@Injectable()
export class RateLimitService {
  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    readonly store: RateLimitStore,
    readonly metrics: MetricsService,
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
   * The identity a request counts against: the caller's (`user:` or `client:`, see
   * `identityOf`) when authenticated, else the client address. `req.ip` honours X-Forwarded-For only
   * from TRUSTED_PROXIES (Fastify's `trustProxy`, set in app.factory.ts).
   */
  trackerOf(caller: MaybeCaller, ip: string | undefined): string {
    return caller ? identityOf(caller) : this.ipTracker(ip);
  }

  async hit(
    bucket: string,
    tracker: string,
    amount: number,
    limit: number,
    windowS: number,
  ): Promise<HitResult | undefined> {
    const hit = await this.store.hit(this.key(bucket, tracker), amount, limit, windowS * 1000);
    this.record(bucket, hit);
    return hit;
  }

  /** `atrium_rate_limit_decisions_total`: allowed, limited, or unavailable (no answer: fail open). */
  record(bucket: string, hit: { allowed: boolean } | undefined): void {
    this.metrics.recordRateLimit(
      bucket,
      hit === undefined ? 'unavailable' : hit.allowed ? 'allowed' : 'limited',
    );
  }

  get authRateLimit(): number {
    return this.config.authRateLimit;
  }

  get requestLimit(): number {
    return this.config.rateLimit;
  }

  /**
   * One request against the caller's (or the address's) request bucket, for requests the auth
   * guard refuses itself (401 without credentials, 403 for the role) before the request limit
   * would count them: refusals are not free. Not allowed once the bucket is used up (answer 429).
   */
  async countRefusedRequest(
    caller: MaybeCaller,
    ip: string | undefined,
  ): Promise<HitResult | undefined> {
    if (!this.enabled) {
      return undefined;
    }
    return this.hit(
      BUCKET_REQUESTS,
      this.trackerOf(caller, ip),
      1,
      this.config.rateLimit,
      this.config.rateLimitWindowS,
    );
  }
}
