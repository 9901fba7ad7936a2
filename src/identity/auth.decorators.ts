import {
  applyDecorators,
  createParamDecorator,
  SetMetadata,
  type ExecutionContext,
} from '@nestjs/common';
import { ApiBasicAuth, ApiBearerAuth, ApiExtension, ApiSecurity } from '@nestjs/swagger';
import type { MaybeCaller } from './caller.js';
import type { ApiScope } from './scopes.js';
import type { Role } from './role.js';

export const AUTH_METADATA = 'atrium:auth';

/** A route an OAuth access token (a partner app) may never call, whatever its scopes. */
export const FIRST_PARTY_ONLY = 'first-party-only';

/**
 * What an OAuth access token needs on a route, on top of its user's role: every listed scope
 * (`[]`: any OAuth token), or FIRST_PARTY_ONLY. First-party tokens, Basic and API keys are not
 * limited by scopes (docs/oauth.md).
 */
type RouteScopes = readonly ApiScope[] | typeof FIRST_PARTY_ONLY;

/** A protected route's declaration: both parts are required, so a new route cannot forget one. */
export interface ProtectedRoute {
  /** Lowest role allowed (GUEST: any authenticated caller). */
  role: Role;
  scopes: RouteScopes;
}

export type AuthRequirement = (ProtectedRoute & { public?: false }) | { public: true };

/** Marks a public operation for the OpenAPI document (replaced by `security: []`, oauth-openapi.ts). */
export const OPENAPI_PUBLIC_MARK = 'x-atrium-public';

/**
 * The OpenAPI security requirement of a route: the schemes the credential door accepts, with the
 * route's scopes in the `oauth2` requirement (no `oauth2` when partner apps may not call it).
 */
function openApiSecurity(requirement: AuthRequirement) {
  if (requirement.public) {
    return ApiExtension(OPENAPI_PUBLIC_MARK, true);
  }
  const oauth =
    requirement.scopes === FIRST_PARTY_ONLY ? [] : [ApiSecurity('oauth2', [...requirement.scopes])];
  return applyDecorators(
    ApiBearerAuth(),
    ...oauth,
    ApiBasicAuth(),
    ApiSecurity('api_key'),
    ApiSecurity('api_key_query'),
  );
}

function declare(requirement: AuthRequirement): ClassDecorator & MethodDecorator {
  return (target: object, key?: string | symbol, descriptor?: PropertyDescriptor) => {
    if (descriptor) {
      SetMetadata(AUTH_METADATA, requirement)(target, key!, descriptor);
      openApiSecurity(requirement)(target, key, descriptor);
      return;
    }
    // on a controller: for each route without a declaration of its own
    SetMetadata(AUTH_METADATA, requirement)(target as () => unknown);
    const proto = (target as { prototype: Record<string, unknown> }).prototype;
    for (const name of Object.getOwnPropertyNames(proto)) {
      const method = Object.getOwnPropertyDescriptor(proto, name);
      if (
        name !== 'constructor' &&
        typeof method?.value === 'function' &&
        !Reflect.hasOwnMetadata(AUTH_METADATA, method.value as object)
      ) {
        openApiSecurity(requirement)(proto, name, method);
      }
    }
  };
}

/**
 * Who may call a route: the lowest role, and the scopes an OAuth access token needs. Every route
 * carries this or `@Public()` (test/auth-declarations.e2e-spec.ts walks them all); a route without
 * either still needs an authenticated caller and is refused to OAuth tokens (secure by default).
 * It is also the route's OpenAPI security requirement. On a controller it applies to each route
 * that has no declaration of its own.
 */
export const Authenticated = (requirement: ProtectedRoute): ClassDecorator & MethodDecorator =>
  declare(requirement);

/** No credentials needed; presented credentials are ignored (`security: []` in OpenAPI). */
export const Public = (): ClassDecorator & MethodDecorator => declare({ public: true });

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
