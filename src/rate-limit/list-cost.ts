import type { FastifyReply, FastifyRequest } from 'fastify';
import type { MaybeCaller } from '../identity/caller.js';
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
 * refused page spends nothing. The last step of the REST request guard (src/app.guard.ts): the caller
 * is known and the query has been checked.
 */
export class ListCost {
  constructor(
    private readonly config: AppConfig,
    private readonly limits: RateLimitService,
  ) {}

  /** The list route's row cost (`ApiPage`), or undefined for routes that are not lists. */
  static rowCostOf(handler: object): number | undefined {
    return Reflect.getMetadata(LIST_ROW_COST, handler) as number | undefined;
  }

  /** A costly non-list route's fixed cost (an export: `FIXED_REQUEST_COST`), or undefined. */
  static fixedCostOf(handler: object): number | undefined {
    return Reflect.getMetadata(FIXED_REQUEST_COST, handler) as number | undefined;
  }

  /** Charges one page of a list whose rows cost `rowCost`; throws 429 when over budget. */
  async charge(
    req: FastifyRequest & { caller?: MaybeCaller },
    reply: FastifyReply,
    rowCost: number,
  ): Promise<void> {
    if (!this.limits.enabled) {
      return;
    }
    const limit = requestedLimit((req.query as Record<string, unknown>).limit);
    if (limit === undefined) {
      return; // the list answers 400
    }
    await this.spend(req, reply, 1 + limit * rowCost, `this page (limit ${limit})`);
  }

  /** Charges a route's fixed cost (an export); throws 429 when over budget. */
  async chargeFixed(
    req: FastifyRequest & { caller?: MaybeCaller },
    reply: FastifyReply,
    cost: number,
  ): Promise<void> {
    if (this.limits.enabled) {
      await this.spend(req, reply, cost, 'this request');
    }
  }

  private async spend(
    req: FastifyRequest & { caller?: MaybeCaller },
    reply: FastifyReply,
    cost: number,
    what: string,
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
    void reply.header('RateLimit-Cost-Remaining', String(Math.max(0, budget - hit.count)));
    if (!hit.allowed) {
      void reply.header('Retry-After', String(secondsUntil(hit.resetMs)));
      throw rateLimitedError(
        hit.resetMs,
        `Cost budget exhausted: ${what} costs ${cost} points, ` +
          `${Math.max(0, budget - hit.count)} of ${budget} are left`,
      );
    }
  }
}
