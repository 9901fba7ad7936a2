import { Injectable, type CanActivate, type ExecutionContext } from '@nestjs/common';
import { GqlExecutionContext } from '@nestjs/graphql';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { GraphQLError, Kind, type DocumentNode, type GraphQLResolveInfo } from 'graphql';
import { DomainError } from '../../common/errors.js';
import type { MaybeCaller } from '../caller.js';
import {
  checkScopes,
  graphqlRequirement,
  insufficientScopeChallenge,
  restRequirement,
} from './oauth-scope.policy.js';
import { OAuthTokenVerifier } from './oauth-token.verifier.js';

const NOT_FOR_APPS = 'This operation is not available to partner apps (OAuth access tokens)';

/** The document of one root field's selection (with the operation's fragments). */
function rootFieldDocument(info: GraphQLResolveInfo): DocumentNode {
  return {
    kind: Kind.DOCUMENT,
    definitions: [
      {
        ...info.operation,
        selectionSet: { kind: Kind.SELECTION_SET, selections: [...info.fieldNodes] },
      },
      ...Object.values(info.fragments),
    ],
  };
}

/**
 * Scopes for OAuth access tokens (global guard, after the auth guard has set the caller): a token
 * may do what its user's role allows AND its scopes cover (oauth-scope.policy.ts). Other callers
 * pass untouched. REST: 403 `insufficient_scope` with `WWW-Authenticate: Bearer
 * error="insufficient_scope", scope="…"`. GraphQL (each root field, subscriptions included):
 * FORBIDDEN with `extensions.requiredScopes`, so a refused field is null beside the others' data.
 */
@Injectable()
export class OAuthScopeGuard implements CanActivate {
  constructor(private readonly verifier: OAuthTokenVerifier) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const type = context.getType<string>();
    if (type === 'http') {
      const req = context.switchToHttp().getRequest<FastifyRequest & { caller?: MaybeCaller }>();
      if (req.caller?.method !== 'oauth') {
        return true;
      }
      const route = req.routeOptions.url ?? req.url.split('?', 1)[0] ?? '';
      const check = checkScopes(req.caller, restRequirement(req.method, route));
      if (check.allowed) {
        return true;
      }
      if (check.unavailable) {
        throw new DomainError('forbidden', NOT_FOR_APPS);
      }
      const reply = context.switchToHttp().getResponse<FastifyReply>();
      void reply.header('WWW-Authenticate', insufficientScopeChallenge(check.missing));
      throw new DomainError(
        'insufficient_scope',
        `This token lacks the scope(s): ${check.missing.join(' ')}`,
      );
    }
    if (type === 'graphql') {
      const gql = GqlExecutionContext.create(context);
      const gqlContext = gql.getContext<{ caller?: MaybeCaller; transport?: string }>();
      const caller = gqlContext?.caller;
      if (caller?.method !== 'oauth') {
        return true;
      }
      // a socket authenticated once: a revoked grant stops its next operations too
      if (gqlContext.transport === 'ws' && !(await this.verifier.stillValid(caller))) {
        throw new GraphQLError('The access token is no longer valid', {
          extensions: { code: 'UNAUTHENTICATED' },
        });
      }
      const info = gql.getInfo<GraphQLResolveInfo>();
      if (!info?.operation) {
        return true;
      }
      const requirement = graphqlRequirement(
        info.schema,
        rootFieldDocument(info),
        undefined,
        info.variableValues,
      );
      const check = checkScopes(caller, requirement);
      if (check.allowed) {
        return true;
      }
      throw new GraphQLError(
        check.unavailable
          ? NOT_FOR_APPS
          : `This token lacks the scope(s): ${check.missing.join(' ')}`,
        { extensions: { code: 'FORBIDDEN', requiredScopes: requirement.scopes } },
      );
    }
    return true;
  }
}
