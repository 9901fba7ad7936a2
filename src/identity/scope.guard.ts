import type { FastifyReply } from 'fastify';
import { DomainError } from '../common/errors.js';
import { FIRST_PARTY_ONLY, type AuthRequirement } from './auth.decorators.js';
import type { MaybeCaller } from './caller.js';
import { insufficientScopeChallenge, lacksScopes, missingScopes, NOT_FOR_APPS } from './scopes.js';

/**
 * Scopes of OAuth access tokens on REST routes (a step of the REST request guard, src/app.guard.ts,
 * once the caller is known): a token may do what its user's role allows AND what the route's
 * `@Authenticated({ role, scopes })` declares. Other callers pass untouched. A route declared
 * FIRST_PARTY_ONLY, or not declared at all, is refused to OAuth tokens (403 forbidden); missing
 * scopes are 403 `insufficient_scope` with `WWW-Authenticate: Bearer error="insufficient_scope",
 * scope="…"`. Returns the refusal to throw, undefined when the route is allowed.
 * GraphQL reads the `@auth` directive of each root field instead (graphql/directives/auth.directive.ts).
 */
export function routeScopeRefusal(
  caller: MaybeCaller,
  requirement: AuthRequirement | undefined,
  reply: FastifyReply,
): DomainError | undefined {
  if (caller?.method !== 'oauth' || requirement?.public) {
    return undefined;
  }
  if (!requirement || requirement.scopes === FIRST_PARTY_ONLY) {
    return new DomainError('forbidden', NOT_FOR_APPS);
  }
  const missing = missingScopes(caller.scopes ?? [], requirement.scopes);
  if (missing.length === 0) {
    return undefined;
  }
  void reply.header('WWW-Authenticate', insufficientScopeChallenge(missing));
  return new DomainError('insufficient_scope', lacksScopes(missing));
}
