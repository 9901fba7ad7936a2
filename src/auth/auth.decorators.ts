import {
  applyDecorators,
  createParamDecorator,
  SetMetadata,
  type ExecutionContext,
} from '@nestjs/common';
import { ApiBasicAuth, ApiBearerAuth, ApiSecurity } from '@nestjs/swagger';
import type { MaybeCaller } from './caller.js';
import { Role } from './role.js';

export const AUTH_METADATA = 'atrium:auth';

export interface AuthRequirement {
  /** No credentials needed; presented credentials are ignored. */
  public?: boolean;
  /** Lowest role allowed (default GUEST: any authenticated caller). */
  role?: Role;
}

/** The OpenAPI security requirement of a protected route: the schemes the credential door accepts. */
const openApiSecurity = () =>
  applyDecorators(ApiBearerAuth(), ApiBasicAuth(), ApiSecurity('api_key'));

/**
 * Who may call a route; routes without it need an authenticated caller (secure by default). It is
 * also the route's OpenAPI security requirement (Bearer, Basic or an API key; none for public
 * routes). On a controller it applies to each route that has no `@Authenticated` of its own, so a
 * route never lists the schemes twice.
 */
export const Authenticated =
  (requirement: AuthRequirement = {}): ClassDecorator & MethodDecorator =>
  (target: object, key?: string | symbol, descriptor?: PropertyDescriptor) => {
    if (descriptor) {
      SetMetadata(AUTH_METADATA, requirement)(target, key!, descriptor);
      if (!requirement.public) {
        openApiSecurity()(target, key, descriptor);
      }
      return;
    }
    SetMetadata(AUTH_METADATA, requirement)(target as () => unknown);
    if (requirement.public) {
      return;
    }
    const proto = (target as { prototype: Record<string, unknown> }).prototype;
    for (const name of Object.getOwnPropertyNames(proto)) {
      const method = Object.getOwnPropertyDescriptor(proto, name);
      if (
        name !== 'constructor' &&
        typeof method?.value === 'function' &&
        !Reflect.hasOwnMetadata(AUTH_METADATA, method.value as object)
      ) {
        openApiSecurity()(proto, name, method);
      }
    }
  };
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
