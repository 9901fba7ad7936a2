import { Injectable, type ExecutionContext } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { AuthGuard as PassportAuthGuard } from '@nestjs/passport';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { DomainError, Forbidden } from '../common/errors.js';
import { RateLimitService } from '../rate-limit/rate-limit.service.js';
import { AUTH_METADATA, type AuthRequirement } from './auth.decorators.js';
import { hasRole, type Caller } from './caller.js';
import { Role } from './role.js';

/** Strategies in the fixed order they are tried. Each fails (never throws) on foreign credentials. */
export const STRATEGIES = ['jwt', 'basic', 'api-key', 'api-key-query'];

type AuthedRequest = FastifyRequest & { caller?: Caller; user?: Caller };

export function hasCredentials(req: FastifyRequest): boolean {
  const query = req.query as Record<string, unknown> | undefined;
  return Boolean(req.headers.authorization || req.headers['x-api-key'] || query?.api_key);
}

export function unauthorized(message: string): DomainError {
  return new DomainError('unauthorized', message);
}

/**
 * The one guard (global): whichever credentials came in become `request.caller`, then the route's
 * `@Authenticated` requirement decides. 401 (the error filter adds `WWW-Authenticate`) for missing/invalid credentials, 403 for too low a role.
 * GraphQL builds its caller in the context factory and is not handled here.
 */
@Injectable()
export class AuthGuard extends PassportAuthGuard(STRATEGIES) {
  constructor(
    private readonly reflector: Reflector,
    private readonly limits: RateLimitService,
  ) {
    super();
  }

  override async canActivate(context: ExecutionContext): Promise<boolean> {
    if (context.getType() !== 'http') {
      return true;
    }
    const requirement =
      this.reflector.getAllAndOverride<AuthRequirement | undefined>(AUTH_METADATA, [
        context.getHandler(),
        context.getClass(),
      ]) ?? {};
    if (requirement.public) {
      return true;
    }
    const req = context.switchToHttp().getRequest<AuthedRequest>();
    const reply = context.switchToHttp().getResponse<FastifyReply>();
    if (!req.caller) {
      if (!hasCredentials(req)) {
        await this.limits.countRefusedRequest(req, reply); // refusals count too (docs/rate-limits.md)
        throw unauthorized('Authentication required');
      }
      // failed checks count against the address's auth bucket; over it, 429 (docs/rate-limits.md)
      await this.limits.assertCredentialChecksAllowed(req, reply);
      try {
        await super.canActivate(context);
      } catch (err) {
        if (err instanceof DomainError && err.code === 'unauthorized') {
          await this.limits.failedCredentials(req, reply);
        }
        throw err;
      }
      req.caller = req.user;
    }
    if (!hasRole(req.caller, requirement.role ?? Role.GUEST)) {
      await this.limits.countRefusedRequest(req, reply);
      throw Forbidden();
    }
    return true;
  }

  override handleRequest<T>(err: unknown, user: T): T {
    if (err) {
      // a strategy errored (e.g. the database is unreachable): that is a 500, not a 401
      throw err instanceof Error ? err : new Error('authentication failed unexpectedly');
    }
    if (!user) {
      throw unauthorized('Invalid credentials');
    }
    return user;
  }
}
