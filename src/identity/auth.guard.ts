import { Injectable, Optional, type ExecutionContext } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { markDeprecated } from '../common/deprecation-headers.js';
import { DomainError, Forbidden } from '../common/errors.js';
import {
  refuseWith,
  replySink,
  TOO_MANY_FAILURES,
  writeRateLimitHeaders,
} from '../common/rate-limit-headers.js';
import { AUTH_METADATA, type AuthRequirement, type ProtectedRoute } from './auth.decorators.js';
import { hasRole, type Caller, type MaybeCaller } from './caller.js';
import { CredentialAttempts, NoCredentialAttempts } from './credential-attempts.js';
import { CredentialsService, type CredentialCarrier } from './credentials.service.js';
import { Role } from './role.js';
import { API_KEY_QUERY_DEPRECATION } from './strategies/api-key.strategy.js';

type AuthedRequest = FastifyRequest & { caller?: Caller };

function single(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

/** A REST request's credentials: Authorization, X-API-Key, `?api_key=`, and the client address. */
function restCarrier(req: FastifyRequest): CredentialCarrier {
  const query = req.query as Record<string, unknown> | undefined;
  const queryKey = query?.api_key;
  return {
    authorization: single(req.headers.authorization),
    apiKey: single(req.headers['x-api-key']),
    queryApiKey: typeof queryKey === 'string' ? queryKey : undefined,
    address: req.ip,
    requestId: req.id,
  };
}

/** The route's `@Authenticated`/`@Public` declaration (the route's own, else its controller's). */
export function routeRequirement(
  reflector: Reflector,
  context: ExecutionContext,
): AuthRequirement | undefined {
  return reflector.getAllAndOverride<AuthRequirement | undefined>(AUTH_METADATA, [
    context.getHandler(),
    context.getClass(),
  ]);
}

function unauthorized(message: string): DomainError {
  return new DomainError('unauthorized', message);
}

/**
 * The credential part of the REST request guard (src/app.guard.ts), a thin adapter over the
 * credential door (CredentialsService): whichever credentials came in become `request.caller`, then
 * the route's `@Authenticated` requirement decides. 401 (the error filter adds `WWW-Authenticate`)
 * for missing or invalid credentials, 429 when a credential bucket refuses them, 403 for too low a
 * role. GraphQL builds its caller in its context factory (over the same door) and is not handled here.
 */
@Injectable()
export class RouteAuthenticator {
  private readonly attempts: CredentialAttempts;

  constructor(
    private readonly door: CredentialsService,
    @Optional() attempts?: CredentialAttempts,
  ) {
    this.attempts = attempts ?? new NoCredentialAttempts();
  }

  /** The caller of a protected route (set on `req.caller`), refused unless its role suffices. */
  async admit(
    req: AuthedRequest,
    reply: FastifyReply,
    requirement: ProtectedRoute | undefined,
  ): Promise<Caller> {
    if (!req.caller) {
      const carrier = restCarrier(req);
      if (carrier.queryApiKey) {
        markDeprecated(req, API_KEY_QUERY_DEPRECATION);
      }
      const answer = await this.door.authenticate(carrier);
      switch (answer.kind) {
        case 'anonymous':
          await this.countRefusal(undefined, req, reply);
          throw unauthorized('Authentication required');
        case 'invalid':
          throw unauthorized('Invalid credentials');
        case 'throttled':
          throw refuseWith(reply, answer.throttle.limit, answer.throttle, TOO_MANY_FAILURES);
        case 'caller':
          req.caller = answer.caller;
      }
    }
    // an undeclared route (none exists: test/auth-declarations.e2e-spec.ts) needs any caller
    if (!hasRole(req.caller, requirement?.role ?? Role.GUEST)) {
      await this.countRefusal(req.caller, req, reply);
      throw Forbidden();
    }
    return req.caller;
  }

  /** Refusals count against the request bucket too (docs/rate-limits.md); 429 once it is used up. */
  async countRefusal(caller: MaybeCaller, req: FastifyRequest, reply: FastifyReply): Promise<void> {
    const count = await this.attempts.refusedRequest(caller, req.ip);
    if (!count) {
      return;
    }
    if (!count.allowed) {
      throw refuseWith(reply, count.limit, count);
    }
    writeRateLimitHeaders(replySink(reply), count.limit, count);
  }
}
