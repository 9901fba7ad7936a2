import { Injectable, type ExecutionContext } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import {
  InjectThrottlerOptions,
  InjectThrottlerStorage,
  ThrottlerGuard,
  type ThrottlerModuleOptions,
  type ThrottlerRequest,
  type ThrottlerStorage,
} from '@nestjs/throttler';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { rateLimitedError, RateLimitService, replySink, writeRateLimitHeaders } from './rate-limit.service.js';
import { isFailOpen } from './throttler-storage.adapter.js';

/** Limited: everything under /api/ (the REST API). Health probes, metrics and docs are not. */
function limitedPath(req: FastifyRequest): boolean {
  return (req.routeOptions.url ?? req.url).startsWith('/api/');
}

/**
 * @nestjs/throttler's guard, registered globally AFTER the auth guard (RateLimitModule is imported
 * after AuthModule), so `request.caller` is known and each identity has its own bucket. Changes to
 * the stock guard: `RateLimit-*` headers without suffix (the contract's names), 429 as our error
 * envelope with `Retry-After`, one counter per identity across all routes (not per handler), and
 * fail-open when the store is unavailable (no headers then: the numbers would be made up).
 * GraphQL is counted per operation by GraphqlRateLimitPlugin, not per resolver here.
 */
@Injectable()
export class RateLimitGuard extends ThrottlerGuard {
  protected override headerPrefix = 'RateLimit';

  constructor(
    @InjectThrottlerOptions() options: ThrottlerModuleOptions,
    @InjectThrottlerStorage() storage: ThrottlerStorage,
    reflector: Reflector,
    private readonly limits: RateLimitService,
  ) {
    super(options, storage, reflector);
  }

  protected override shouldSkip(context: ExecutionContext): Promise<boolean> {
    if (!this.limits.enabled || context.getType() !== 'http') {
      return Promise.resolve(true);
    }
    return Promise.resolve(!limitedPath(context.switchToHttp().getRequest<FastifyRequest>()));
  }

  protected override async handleRequest(request: ThrottlerRequest): Promise<boolean> {
    const { context, limit, ttl, throttler, getTracker, generateKey } = request;
    const { req, res } = this.getRequestResponse(context) as { req: FastifyRequest; res: FastifyReply };
    const name = throttler.name ?? 'default';
    const tracker = await getTracker(req, context);
    const record = await this.storageService.increment(generateKey(context, tracker, name), ttl, limit, ttl, name);
    if (isFailOpen(record)) {
      return true;
    }
    const sink = replySink(res);
    const hit = { count: Math.min(record.totalHits, limit), resetMs: record.timeToExpire * 1000, allowed: !record.isBlocked };
    writeRateLimitHeaders(sink, limit, hit);
    if (record.isBlocked) {
      sink('Retry-After', String(record.timeToBlockExpire));
      throw rateLimitedError(record.timeToBlockExpire * 1000);
    }
    return true;
  }
}
