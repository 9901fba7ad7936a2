import { Injectable, type ExecutionContext } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import {
  InjectThrottlerOptions,
  InjectThrottlerStorage,
  ThrottlerGuard,
  type ThrottlerGenerateKeyFunction,
  type ThrottlerGetTrackerFunction,
  type ThrottlerModuleOptions,
  type ThrottlerOptions,
  type ThrottlerRequest,
  type ThrottlerStorage,
} from '@nestjs/throttler';
import {
  THROTTLER_BLOCK_DURATION,
  THROTTLER_KEY_GENERATOR,
  THROTTLER_LIMIT,
  THROTTLER_SKIP,
  THROTTLER_TRACKER,
  THROTTLER_TTL,
} from '@nestjs/throttler/dist/throttler.constants.js';
import type { FastifyReply, FastifyRequest } from 'fastify';
import {
  rateLimitedError,
  RateLimitService,
  replySink,
  secondsUntil,
  writeRateLimitHeaders,
} from './rate-limit.service.js';
import type { HitResult } from './rate-limit.store.js';
import { isFailOpen } from './throttler-storage.adapter.js';

/** Limited: everything under /api/ (the REST API). Health probes, metrics and docs are not. */
function limitedPath(req: FastifyRequest): boolean {
  return (req.routeOptions.url ?? req.url).startsWith('/api/');
}

/** One throttler as it applies to one route: what the stock guard looks up on every request. */
interface RoutePlan {
  throttler: ThrottlerOptions;
  skip: boolean;
  skipIf?: (context: ExecutionContext) => boolean;
  limit: number;
  ttl: number;
  getTracker: ThrottlerGetTrackerFunction;
  generateKey: ThrottlerGenerateKeyFunction;
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

  /** Per handler (routes never change): the stock guard's ten metadata look-ups per request, once. */
  private readonly plans = new WeakMap<object, RoutePlan[] | null>();

  /**
   * The stock `canActivate` with the per-route resolution cached (it cost ~5 µs per request in a
   * profile: reflect-metadata look-ups and an async loop). Routes whose limit or ttl is a function
   * (resolved per request) take the stock path.
   */
  override async canActivate(context: ExecutionContext): Promise<boolean> {
    if (await this.shouldSkip(context)) {
      return true;
    }
    const handler = context.getHandler();
    let plan = this.plans.get(handler);
    if (plan === undefined) {
      plan = this.planFor(context);
      this.plans.set(handler, plan);
    }
    if (plan === null) {
      return super.canActivate(context);
    }
    for (const p of plan) {
      if (p.skip || p.skipIf?.(context)) {
        continue;
      }
      const { throttler, limit, ttl, getTracker, generateKey } = p;
      await this.handleRequest({
        context,
        throttler,
        limit,
        ttl,
        blockDuration: ttl,
        getTracker,
        generateKey,
      });
    }
    return true;
  }

  private planFor(context: ExecutionContext): RoutePlan[] | null {
    const targets = [context.getHandler(), context.getClass()];
    const plan: RoutePlan[] = [];
    for (const throttler of this.throttlers) {
      const name = throttler.name ?? 'default';
      const get = <T>(key: string): T | undefined =>
        this.reflector.getAllAndOverride<T | undefined>(key + name, targets);
      const limit = get<ThrottlerOptions['limit']>(THROTTLER_LIMIT) ?? throttler.limit;
      const ttl = get<ThrottlerOptions['ttl']>(THROTTLER_TTL) ?? throttler.ttl;
      if (
        typeof limit !== 'number' ||
        typeof ttl !== 'number' ||
        get(THROTTLER_BLOCK_DURATION) !== undefined
      ) {
        return null;
      }
      plan.push({
        throttler,
        skip: Boolean(get<boolean>(THROTTLER_SKIP)),
        skipIf: throttler.skipIf ?? this.commonOptions.skipIf,
        limit,
        ttl,
        getTracker:
          get<ThrottlerGetTrackerFunction>(THROTTLER_TRACKER) ??
          throttler.getTracker ??
          this.commonOptions.getTracker!,
        generateKey:
          get<ThrottlerGenerateKeyFunction>(THROTTLER_KEY_GENERATOR) ??
          throttler.generateKey ??
          this.commonOptions.generateKey!,
      });
    }
    return plan;
  }

  protected override shouldSkip(context: ExecutionContext): Promise<boolean> {
    if (!this.limits.enabled || context.getType() !== 'http') {
      return Promise.resolve(true);
    }
    return Promise.resolve(!limitedPath(context.switchToHttp().getRequest<FastifyRequest>()));
  }

  protected override async handleRequest(request: ThrottlerRequest): Promise<boolean> {
    const { context, limit, ttl, throttler, getTracker, generateKey } = request;
    const { req, res } = this.getRequestResponse(context) as {
      req: FastifyRequest;
      res: FastifyReply;
    };
    const name = throttler.name ?? 'default';
    const tracker = await getTracker(req, context);
    const key = generateKey(context, tracker, name);
    if ((req as FastifyRequest & { caller?: unknown }).caller !== undefined) {
      // an authenticated caller: its request counter, one Redis call. The credential buckets are not
      // read here: valid credentials are never refused by them (docs/rate-limits.md)
      const hit = await this.limits.store.hit(key, 1, limit, ttl);
      this.limits.record(name, hit);
      return hit === undefined ? true : this.answer(res, limit, hit);
    }
    const record = await this.storageService.increment(key, ttl, limit, ttl, name);
    if (isFailOpen(record)) {
      this.limits.record(name, undefined);
      return true;
    }
    this.limits.record(name, { allowed: !record.isBlocked });
    const count = Math.min(record.totalHits, limit);
    return this.answer(res, limit, {
      count,
      resetMs: record.timeToExpire * 1000,
      allowed: !record.isBlocked,
    });
  }

  /** RateLimit-* headers; 429 with Retry-After when the hit was refused. */
  private answer(res: FastifyReply, limit: number, hit: HitResult): boolean {
    const sink = replySink(res);
    writeRateLimitHeaders(sink, limit, hit);
    if (!hit.allowed) {
      sink('Retry-After', String(secondsUntil(hit.resetMs)));
      throw rateLimitedError(hit.resetMs);
    }
    return true;
  }
}
