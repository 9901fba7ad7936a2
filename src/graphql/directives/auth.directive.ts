import { getDirective, MapperKind, mapSchema } from '@graphql-tools/utils';
import { defaultFieldResolver, type GraphQLFieldResolver, type GraphQLSchema } from 'graphql';
import { hasRole } from '../../auth/caller.js';
import { isRole, type Role } from '../../auth/role.js';
import { Forbidden, Unauthorized } from '../../common/errors.js';
import type { GqlContext } from '../context.js';
import { AUTH_DIRECTIVE } from './directives.js';

function requireRole(ctx: GqlContext, role: Role): void {
  if (!ctx.caller) {
    throw Unauthorized();
  }
  if (!hasRole(ctx.caller, role)) {
    throw Forbidden(`This field requires the ${role} role`);
  }
}

/**
 * Enforces `@auth(requires: ROLE)` on every field that carries it, whatever the transport (HTTP or
 * WebSocket run the same schema). A refusal throws FORBIDDEN (UNAUTHENTICATED for anonymous callers)
 * from the field, so the field becomes null and the rest of the data is still returned. The check is
 * a plain function call per resolved field: no Nest guard pipeline.
 */
export function authDirectiveTransformer(schema: GraphQLSchema): GraphQLSchema {
  return mapSchema(schema, {
    [MapperKind.OBJECT_FIELD]: (field) => {
      const directive = getDirective(schema, field, AUTH_DIRECTIVE)?.[0];
      const role: unknown = directive?.requires;
      if (!isRole(role)) {
        return field;
      }
      const resolve: GraphQLFieldResolver<unknown, GqlContext> =
        field.resolve ?? defaultFieldResolver;
      field.resolve = (source, args, ctx: GqlContext, info) => {
        requireRole(ctx, role);
        return resolve(source, args, ctx, info);
      };
      if (field.subscribe) {
        const subscribe = field.subscribe;
        field.subscribe = (source, args, ctx: GqlContext, info) => {
          requireRole(ctx, role);
          return subscribe(source, args, ctx, info);
        };
      }
      return field;
    },
  });
}
