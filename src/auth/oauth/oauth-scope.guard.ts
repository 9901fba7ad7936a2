import { Injectable, type CanActivate, type ExecutionContext } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { DomainError } from '../../common/errors.js';
import { FIRST_PARTY_ONLY } from '../auth.decorators.js';
import { routeRequirement } from '../auth.guard.js';
import type { MaybeCaller } from '../caller.js';
import {
  insufficientScopeChallenge,
  lacksScopes,
  missingScopes,
  NOT_FOR_APPS,
} from './oauth.scopes.js';

/**
 * Scopes of OAuth access tokens on REST routes (global guard, after the auth guard has set the
 * caller): a token may do what its user's role allows AND what the route's `@Authenticated({ role,
 * scopes })` declares. Other callers pass untouched. A route declared FIRST_PARTY_ONLY, or not
 * declared at all, is refused to OAuth tokens (403 forbidden); missing scopes are 403
 * `insufficient_scope` with `WWW-Authenticate: Bearer error="insufficient_scope", scope="…"`.
 * GraphQL reads the `@auth` directive of each root field instead (graphql/directives/auth.directive.ts).
 */
@Injectable()
export class OAuthScopeGuard implements CanActivate {
  constructor(private readonly reflector: Reflector) {}

  canActivate(context: ExecutionContext): boolean {
    if (context.getType() !== 'http') {
      return true;
    }
    const req = context.switchToHttp().getRequest<FastifyRequest & { caller?: MaybeCaller }>();
    const caller = req.caller;
    if (caller?.method !== 'oauth') {
      return true;
    }
    const requirement = routeRequirement(this.reflector, context);
    if (requirement?.public) {
      return true;
    }
    if (!requirement || requirement.scopes === FIRST_PARTY_ONLY) {
      throw new DomainError('forbidden', NOT_FOR_APPS);
    }
    const missing = missingScopes(caller.scopes ?? [], requirement.scopes);
    if (missing.length === 0) {
      return true;
    }
    const reply = context.switchToHttp().getResponse<FastifyReply>();
    void reply.header('WWW-Authenticate', insufficientScopeChallenge(missing));
    throw new DomainError('insufficient_scope', lacksScopes(missing));
  }
}
