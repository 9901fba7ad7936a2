import { Inject, Injectable } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { MaybeCaller } from '../identity/caller.js';
import { APP_CONFIG, type AppConfig } from '../config/config.js';
import { refuseWith, replySink, writeRateLimitHeaders } from '../common/rate-limit-headers.js';
import {
  BUCKET_AUTH,
  BUCKET_REQUESTS,
  CREDENTIAL_ROUTES,
  RateLimitService,
} from './rate-limit.service.js';
import { routeUrl } from '../common/route-url.js';

/** Limited: everything under /api/ (the REST API). Health probes, metrics and docs are not. */
function limitedPath(req: FastifyRequest): boolean {
  return (routeUrl(req) ?? req.url).startsWith('/api/');
}

/**
 * The request buckets of REST routes (docs/rate-limits.md), the last step of the REST request guard
 * (src/app.guard.ts), so `request.caller` is known and each identity has its own bucket: every
 * request under /api/ counts once against its identity's request bucket, across all routes; the
 * credential routes (sign-up) count against the client address's auth bucket instead. `RateLimit-*`
 * headers on every counted answer, 429 as the error envelope with `Retry-After` once the bucket is
 * used up, and fail-open while the store is unavailable (no headers then: the numbers would be made
 * up). GraphQL is counted per operation by GraphqlRateLimitPlugin, not per resolver here.
 */
@Injectable()
export class RequestLimit {
  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly limits: RateLimitService,
  ) {}

  async count(req: FastifyRequest & { caller?: MaybeCaller }, reply: FastifyReply): Promise<void> {
    if (!this.limits.enabled || !limitedPath(req)) {
      return;
    }
    const credentialRoute = req.method === 'POST' && CREDENTIAL_ROUTES.has(routeUrl(req)!);
    const [bucket, tracker, limit, windowS] = credentialRoute
      ? [
          BUCKET_AUTH,
          this.limits.ipTracker(req.ip),
          this.config.authRateLimit,
          this.config.authRateLimitWindowS,
        ]
      : [
          BUCKET_REQUESTS,
          this.limits.trackerOf(req.caller, req.ip),
          this.config.rateLimit,
          this.config.rateLimitWindowS,
        ];
    const hit = await this.limits.hit(bucket, tracker, 1, limit, windowS);
    if (hit === undefined) {
      return;
    }
    if (!hit.allowed) {
      throw refuseWith(reply, limit, hit);
    }
    writeRateLimitHeaders(replySink(reply), limit, hit);
  }
}
