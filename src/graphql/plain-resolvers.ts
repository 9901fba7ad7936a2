import { Injectable } from '@nestjs/common';
import {
  getNamedType,
  isEnumType,
  isInputObjectType,
  isLeafType,
  isObjectType,
  type GraphQLArgument,
  type GraphQLFieldResolver,
  type GraphQLSchema,
} from 'graphql';
import { assertStorableText } from '../common/validation.js';
import type { GqlContext } from './context.js';

/** A resolver as graphql-js calls it. */
export type PlainResolver = GraphQLFieldResolver<unknown, GqlContext, Record<string, unknown>>;

/**
 * Resolvers that graphql-js calls as they are, without Nest's per-call pipeline (~10 µs per call
 * under load: parameter building, the global pipe on every parameter, guards and the exception zone
 * on root fields; docs/performance.md). Only for hot fields whose arguments are all scalars, enums or
 * input objects of enums only (`UserOrder`: GraphQL's own coercion is all their check), registered by
 * name in the resolver's constructor next to the `@Query`/`@ResolveField` method that
 * declares the field (which stays the schema's source and Nest's path elsewhere):
 *
 *   plain.register('User', 'posts', (user, args, ctx) => this.posts(user, ctx, args.first, args.after));
 *
 * Applied to the built schema (`transformSchema`, before `@auth` wraps the root fields): the string
 * arguments get the global pipe's text check first, as through Nest. A field that does not exist,
 * or has an argument that is an input object with a field other than an enum (the global pipe
 * validates those), fails the boot.
 */
@Injectable()
export class PlainResolvers {
  private readonly resolvers = new Map<string, PlainResolver>();

  register(typeName: string, fieldName: string, resolve: PlainResolver): void {
    this.resolvers.set(`${typeName}.${fieldName}`, resolve);
  }

  apply(schema: GraphQLSchema): GraphQLSchema {
    for (const [name, resolve] of this.resolvers) {
      const [typeName, fieldName] = name.split('.');
      const type = schema.getType(typeName);
      const field = isObjectType(type) ? type.getFields()[fieldName] : undefined;
      if (!field) {
        throw new Error(`PlainResolvers: no field ${name} in the schema`);
      }
      const inputs = field.args.filter((a) => !checkedByGraphql(a));
      if (inputs.length > 0) {
        throw new Error(`PlainResolvers: ${name} takes an input object (${inputs[0].name})`);
      }
      const names = field.args.map((a) => a.name);
      field.resolve = (source, args: Record<string, unknown>, ctx: GqlContext, info) => {
        for (const arg of names) {
          const value = args[arg];
          if (typeof value === 'string') {
            assertStorableText(value, arg);
          } else if (value !== null && typeof value === 'object') {
            assertStorableText(value);
          }
        }
        return resolve(source, args, ctx, info);
      };
    }
    return schema;
  }
}

/** An argument GraphQL's coercion checks whole: a scalar, an enum, or an input object of enums. */
function checkedByGraphql(arg: GraphQLArgument): boolean {
  const type = getNamedType(arg.type);
  return (
    isLeafType(type) ||
    (isInputObjectType(type) &&
      Object.values(type.getFields()).every((f) => isEnumType(getNamedType(f.type))))
  );
}
