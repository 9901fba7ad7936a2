import { Inject, Injectable, type CanActivate, type ExecutionContext } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { AuthRequirement } from './identity/auth.decorators.js';
import { RouteAuthenticator, routeRequirement } from './identity/auth.guard.js';
import type { MaybeCaller } from './identity/caller.js';
import { routeScopeRefusal } from './identity/scope.guard.js';
import { QueryParamsCheck } from './http/query-params.js';
import { APP_CONFIG, type AppConfig } from './config/config.js';
import { ListCost } from './rate-limit/list-cost.js';
import { RateLimitService } from './rate-limit/rate-limit.service.js';
import { RequestLimit } from './rate-limit/request-limit.js';

type GuardedRequest = FastifyRequest & { caller?: MaybeCaller };

/** What the guard needs of one route handler, read from its metadata once (routes never change). */
interface RoutePlan {
  requirement: AuthRequirement | undefined;
  /** A list route's row cost (its page is charged to the cost budget), else undefined. */
  rowCost: number | undefined;
  /** A costly non-list route's fixed cost (an export), else undefined. */
  fixedCost: number | undefined;
}

/**
 * The one global guard of the REST API, its steps in a fixed order:
 *
 * 1. credentials: the caller (`request.caller`) and its role (RouteAuthenticator: 401, 403, 429 of
 *    a credential bucket); public routes skip this and the next step;
 * 2. scopes: an OAuth access token's scopes against the route's declaration (403; the refusal
 *    counts against the caller's request bucket like a role's);
 * 3. rate limit: one request against the identity's request bucket (RequestLimit: RateLimit-*
 *    headers, 429);
 * 4. the query: undocumented or repeated parameters (400, QueryParamsCheck);
 * 5. a list page's cost, or an export's fixed cost, against the cost budget (429, ListCost).
 *
 * Then the route's own interceptors and pipes run. GraphQL resolvers pass (the context factory, the
 * `@auth` directive and the Apollo plugins do this for GraphQL).
 */
@Injectable()
export class AppGuard implements CanActivate {
  private readonly plans = new WeakMap<object, RoutePlan>();
  private readonly listCost: ListCost;
  private queryParams: QueryParamsCheck | undefined;

  constructor(
    private readonly reflector: Reflector,
    private readonly authenticator: RouteAuthenticator,
    private readonly requestLimit: RequestLimit,
    @Inject(APP_CONFIG) config: AppConfig,
    limits: RateLimitService,
  ) {
    this.listCost = new ListCost(config, limits);
  }

  /** The documented query parameters of each route (from the OpenAPI document, at boot). */
  checkQueriesWith(check: QueryParamsCheck): void {
    this.queryParams = check;
  }

  async canActivate(context: ExecutionContext): Promise<boolean> {
    if (context.getType() !== 'http') {
      return true;
    }
    const http = context.switchToHttp();
    const req = http.getRequest<GuardedRequest>();
    const reply = http.getResponse<FastifyReply>();
    const plan = this.planFor(context);
    const { requirement } = plan;
    if (!requirement?.public) {
      const caller = await this.authenticator.admit(req, reply, requirement);
      const refusal = routeScopeRefusal(caller, requirement, reply);
      if (refusal) {
        await this.authenticator.countRefusal(caller, req, reply);
        throw refusal;
      }
    }
    await this.requestLimit.count(req, reply);
    this.queryParams?.check(req);
    if (plan.rowCost !== undefined) {
      await this.listCost.charge(req, reply, plan.rowCost);
    } else if (plan.fixedCost !== undefined) {
      await this.listCost.chargeFixed(req, reply, plan.fixedCost);
    }
    return true;
  }

  private planFor(context: ExecutionContext): RoutePlan {
    const handler = context.getHandler();
    let plan = this.plans.get(handler);
    if (plan === undefined) {
      plan = {
        requirement: routeRequirement(this.reflector, context),
        rowCost: ListCost.rowCostOf(handler),
        fixedCost: ListCost.fixedCostOf(handler),
      };
      this.plans.set(handler, plan);
    }
    return plan;
  }
}
