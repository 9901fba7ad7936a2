import type { CallHandler, ExecutionContext, NestInterceptor } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Observable } from 'rxjs';
import type { MaybeCaller } from '../auth/caller.js';
import { DEFAULT_LIMIT, MAX_LIMIT } from '../common/list-query.js';
import { FIXED_REQUEST_COST, LIST_ROW_COST } from '../common/openapi/decorators.js';
import type { AppConfig } from '../config/config.js';
import {
  BUCKET_GRAPHQL_COST,
  rateLimitedError,
  RateLimitService,
  secondsUntil,
} from './rate-limit.service.js';

/** What one export costs from the cost budget (docs/admin.md "Exports"). */
export const EXPORT_COST = 1_000;

/** The page size a list request asks for; undefined when `limit` is invalid (the list answers 400). */
function requestedLimit(raw: unknown): number | undefined {
  if (raw === undefined) {
    return DEFAULT_LIMIT;
  }
  const n = typeof raw === 'string' && /^\d{1,3}$/.test(raw) ? Number(raw) : 0;
  return n >= 1 && n <= MAX_LIMIT ? n : undefined;
}

/**
 * The cost of a REST list page (docs/rate-limits.md "List cost"): a page is priced like the same
 * GraphQL connection, 1 + `limit` x the row's cost (1 + 1 point per member, large text members as
 * their GraphQL `@cost`: `ApiPage` computes it from the row's schema), and spent from the identity's
 * cost budget, the one GraphQL spends (GRAPHQL_COST_BUDGET per GRAPHQL_COST_WINDOW_S, Redis-shared
 * like every counter), so switching transports gets no more rows. Charged before the list runs, as
 * GraphQL charges `first` before execution: over budget -> 429 `rate_limited` with Retry-After, and a
 * refused page spends nothing. Runs after the guards (the caller is known) and the query check.
 */
export class ListCostInterceptor implements NestInterceptor {
  /** Per handler: its row cost, or null for routes that are not lists (read once). */
  private readonly rowCosts = new WeakMap<object, number | null>();

  constructor(
    private readonly config: AppConfig,
    private readonly limits: RateLimitService,
  ) {}

  intercept(
    context: ExecutionContext,
    next: CallHandler,
  ): Observable<unknown> | Promise<Observable<unknown>> {
    if (!this.limits.enabled || context.getType() !== 'http') {
      return next.handle();
    }
    const handler = context.getHandler();
    let rowCost = this.rowCosts.get(handler);
    if (rowCost === undefined) {
      rowCost = (Reflect.getMetadata(LIST_ROW_COST, handler) as number | undefined) ?? null;
      this.rowCosts.set(handler, rowCost);
    }
    const req = context.switchToHttp().getRequest<FastifyRequest & { caller?: MaybeCaller }>();
    if (rowCost === null) {
      const fixed = Reflect.getMetadata(FIXED_REQUEST_COST, handler) as number | undefined;
      if (fixed !== undefined) {
        return this.charge(context, req, 0, fixed).then(() => next.handle());
      }
      return next.handle(); // not a list: no await, no store call
    }
    const limit = requestedLimit((req.query as Record<string, unknown>).limit);
    if (limit === undefined) {
      return next.handle();
    }
    return this.charge(context, req, limit, 1 + limit * rowCost).then(() => next.handle());
  }

  private async charge(
    context: ExecutionContext,
    req: FastifyRequest & { caller?: MaybeCaller },
    limit: number,
    cost: number,
  ): Promise<void> {
    const budget = this.config.graphqlCostBudget;
    const hit = await this.limits.hit(
      BUCKET_GRAPHQL_COST,
      this.limits.trackerOf(req.caller, req.ip),
      cost,
      budget,
      this.config.graphqlCostWindowS,
    );
    if (hit === undefined) {
      return; // store unavailable: fail open, without made-up numbers
    }
    const reply = context.switchToHttp().getResponse<FastifyReply>();
    void reply.header('RateLimit-Cost-Remaining', String(Math.max(0, budget - hit.count)));
    if (!hit.allowed) {
      void reply.header('Retry-After', String(secondsUntil(hit.resetMs)));
      throw rateLimitedError(
        hit.resetMs,
        `Cost budget exhausted: ${limit > 0 ? `this page (limit ${limit})` : 'this request'} costs ${cost} points, ` +
          `${Math.max(0, budget - hit.count)} of ${budget} are left`,
      );
    }
  }
}
