import { createParamDecorator, SetMetadata, type ExecutionContext } from '@nestjs/common';
import type { MaybeCaller } from './caller.js';
import { Role } from './role.js';

export const AUTH_METADATA = 'atrium:auth';

export interface AuthRequirement {
  /** No credentials needed; presented credentials are ignored. */
  public?: boolean;
  /** Lowest role allowed (default GUEST: any authenticated caller). */
  role?: Role;
}

/** Who may call a route; routes without it need an authenticated caller (secure by default). */
export const Authenticated = (requirement: AuthRequirement = {}) =>
  SetMetadata(AUTH_METADATA, requirement);
export const Public = () => Authenticated({ public: true });

/** The request's caller (undefined for anonymous callers of public routes). */
export const CurrentCaller = createParamDecorator(
  (_: unknown, ctx: ExecutionContext): MaybeCaller => {
    if (ctx.getType<string>() === 'graphql') {
      const gqlContext = ctx.getArgs()[2] as { caller?: MaybeCaller };
      return gqlContext?.caller;
    }
    return ctx.switchToHttp().getRequest<{ caller?: MaybeCaller }>().caller;
  },
);
