import {
  HeaderMap,
  type ApolloServerPlugin,
  type GraphQLRequestContext,
  type GraphQLRequestListener,
} from '@apollo/server';
import { Plugin } from '@nestjs/apollo';
import { Inject } from '@nestjs/common';
import type { FastifyRequest } from 'fastify';
import { GraphQLError } from 'graphql';
import type { MaybeCaller } from '../identity/caller.js';
import { APP_CONFIG, type AppConfig } from '../config/config.js';
import {
  BUCKET_GRAPHQL_COST,
  BUCKET_REQUESTS,
  rateLimitedError,
  RateLimitService,
  secondsUntil,
  writeRateLimitHeaders,
} from './rate-limit.service.js';
import type { HitResult } from './rate-limit.store.js';

/**
 * The members of the GraphQL context this plugin reads (src/graphql/context.ts `GqlContext`):
 * the caller, the Fastify request (for the client address) and the operation's computed cost,
 * which the GraphQL module's operation-policy plugin sets in its own `didResolveOperation` before
 * this one runs, and reports (with whatever members we add) as `extensions.cost`.
 */
interface LimitedContext {
  caller?: MaybeCaller;
  req?: FastifyRequest;
  cost?: { requested: number; limit: number; [extra: string]: unknown };
}

type Ctx = GraphQLRequestContext<LimitedContext>;

/**
 * HTTP 429, `extensions.code` RATE_LIMITED, Retry-After (and the bucket's RateLimit-* headers when
 * given). For the GraphQL context factory too (failed credential checks over /graphql).
 */
export function graphqlRateLimited(
  message: string,
  resetMs: number,
  bucket?: { limit: number; hit: HitResult },
): GraphQLError {
  const headers = new HeaderMap([['retry-after', String(secondsUntil(resetMs))]]);
  if (bucket) {
    writeRateLimitHeaders(
      (name, value) => headers.set(name.toLowerCase(), value),
      bucket.limit,
      bucket.hit,
    );
  }
  return new GraphQLError(message, {
    extensions: { code: 'RATE_LIMITED', http: { status: 429, headers } },
  });
}

let lastSecond = 0;
let lastIso = '';
/** `ms` rounded up to the second, as ISO 8601; the same second's string is kept (every request asks). */
function wholeSecondIso(ms: number): string {
  const second = Math.ceil(ms / 1000);
  if (second !== lastSecond) {
    lastSecond = second;
    lastIso = new Date(second * 1000).toISOString();
  }
  return lastIso;
}

/**
 * Rate limits for GraphQL over HTTP, per operation (a guard would count every root field):
 * 1. the request counts against the caller's request bucket (the same bucket as REST), with the
 *    `RateLimit-*` headers on the response;
 * 2. the operation's computed cost is spent from the identity's points budget
 *    (GRAPHQL_COST_BUDGET per GRAPHQL_COST_WINDOW_S), reported as `extensions.cost.remaining`,
 *    `budget` and `resetAt` next to `requested`.
 * Either one exhausted: HTTP 429, `extensions.code` RATE_LIMITED, Retry-After. A refused operation
 * spends no points. Fails open like the REST limiter when the counter store is unavailable.
 * GraphQL over WebSocket is capped by SocketLimitsService instead.
 */
@Plugin()
export class GraphqlRateLimitPlugin implements ApolloServerPlugin<LimitedContext> {
  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly limits: RateLimitService,
  ) {}

  async requestDidStart(start: Ctx): Promise<GraphQLRequestListener<LimitedContext> | void> {
    if (!this.limits.enabled) {
      return;
    }
    const tracker = this.limits.trackerOf(start.contextValue.caller, start.contextValue.req?.ip);
    // counted as soon as the request arrives, so malformed queries count too
    const request = await this.limits.hit(
      BUCKET_REQUESTS,
      tracker,
      1,
      this.config.rateLimit,
      this.config.rateLimitWindowS,
    );
    if (request) {
      writeRateLimitHeaders(
        (name, value) => start.response.http.headers.set(name.toLowerCase(), value),
        this.config.rateLimit,
        request,
      );
    }
    return {
      didResolveOperation: async (rc: Ctx) => {
        if (request && !request.allowed) {
          throw graphqlRateLimited(rateLimitedError(request.resetMs).message, request.resetMs);
        }
        await this.spendCost(rc, tracker);
      },
    };
  }

  private async spendCost(rc: Ctx, tracker: string): Promise<void> {
    const cost = rc.contextValue.cost;
    if (!cost || cost.requested > cost.limit) {
      return; // not computed, or refused as QUERY_TOO_COMPLEX by the GraphQL module
    }
    const budget = this.config.graphqlCostBudget;
    const hit: HitResult | undefined = await this.limits.hit(
      BUCKET_GRAPHQL_COST,
      tracker,
      cost.requested,
      budget,
      this.config.graphqlCostWindowS,
    );
    if (!hit) {
      return;
    }
    const remaining = Math.max(0, budget - hit.count);
    cost.budget = budget;
    cost.remaining = remaining;
    cost.resetAt = wholeSecondIso(Date.now() + hit.resetMs); // whole seconds, like GitHub's
    if (!hit.allowed) {
      throw graphqlRateLimited(
        `Query cost budget exhausted: this operation costs ${cost.requested} points, ${remaining} of ${budget} are left; retry in ${secondsUntil(hit.resetMs)} s`,
        hit.resetMs,
      );
    }
  }
}
