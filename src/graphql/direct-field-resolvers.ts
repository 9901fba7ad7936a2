import {
  EXCEPTION_FILTERS_METADATA,
  GUARDS_METADATA,
  INTERCEPTORS_METADATA,
  PIPES_METADATA,
} from '@nestjs/common/constants.js';
import type { ModulesContainer } from '@nestjs/core';
import {
  PARAM_ARGS_METADATA,
  RESOLVER_NAME_METADATA,
  RESOLVER_PROPERTY_METADATA,
  RESOLVER_TYPE_METADATA,
  TypeMetadataStorage,
} from '@nestjs/graphql';
import {
  getNamedType,
  isLeafType,
  isObjectType,
  type GraphQLField,
  type GraphQLFieldResolver,
  type GraphQLObjectType,
  type GraphQLResolveInfo,
  type GraphQLSchema,
} from 'graphql';
import { assertStorableText } from '../common/validation.js';

/** `@nestjs/graphql`'s parameter kinds (its GqlParamtype enum, which the package does not export). */
const ROOT = 0;
const CONTEXT = 1;
const INFO = 2;
const ARGS = 3;

/**
 * Parameter types the global validation pipe only text-checks: scalars, and `Object` (what
 * TypeScript emits for `number | null` and other unions). Input classes get validated: Nest's path.
 */
const PLAIN_PARAMETER_TYPES: unknown[] = [String, Number, Boolean, Object];

interface ParamMetadata {
  index: number;
  data?: unknown;
  pipes?: unknown[];
}

type Pick = (
  parent: unknown,
  args: Record<string, unknown>,
  ctx: unknown,
  info: GraphQLResolveInfo,
) => unknown;

/**
 * How to build a method's arguments from graphql-js's `(parent, args, context, info)`, or undefined
 * when one of its parameters needs Nest: a pipe of its own, a custom decorator, an argument that is
 * an input class (validated by the global pipe) or a `@Context('member')`.
 */
function argumentPickers(
  prototype: object,
  method: string,
  params: Record<string, ParamMetadata>,
  field: GraphQLField<unknown, unknown>,
): Pick[] | undefined {
  const types = (Reflect.getMetadata('design:paramtypes', prototype, method) ?? []) as unknown[];
  const pickers: Pick[] = [];
  for (const [key, param] of Object.entries(params)) {
    const kind = Number(key.split(':')[0]);
    if (!/^\d+:\d+$/.test(key) || (param.pipes?.length ?? 0) > 0) {
      return undefined;
    }
    if (kind === ROOT && param.data === undefined) {
      pickers[param.index] = (parent) => parent;
    } else if (kind === CONTEXT && param.data === undefined) {
      pickers[param.index] = (_p, _a, ctx) => ctx;
    } else if (kind === INFO && param.data === undefined) {
      pickers[param.index] = (_p, _a, _c, info) => info;
    } else if (
      kind === ARGS &&
      typeof param.data === 'string' &&
      PLAIN_PARAMETER_TYPES.includes(types[param.index]) &&
      isLeafArgument(field, param.data)
    ) {
      const name = param.data;
      // what the global pipe does to such an argument (validation.ts): its text must be storable
      pickers[param.index] = (_p, args) => {
        const value = args[name];
        if (typeof value === 'string') {
          assertStorableText(value, name);
        } else if (value !== null && typeof value === 'object') {
          assertStorableText(value);
        }
        return value;
      };
    } else {
      return undefined;
    }
  }
  return pickers.length === Object.keys(params).length ? pickers : undefined;
}

/** A scalar or enum argument (or a list of them): nothing for an input class to validate. */
function isLeafArgument(field: GraphQLField<unknown, unknown>, name: string): boolean {
  const arg = field.args.find((a) => a.name === name);
  return !!arg && isLeafType(getNamedType(arg.type));
}

/** The GraphQL type a resolver class resolves fields of (`@Resolver(() => UserModel)` -> `User`). */
function parentTypeName(schema: GraphQLSchema, cls: object): string | undefined {
  const declared: unknown = Reflect.getMetadata(RESOLVER_TYPE_METADATA, cls);
  if (typeof declared !== 'string') {
    return undefined;
  }
  if (schema.getType(declared)) {
    return declared;
  }
  // the class name when @Resolver ran before the model's @ObjectType() was known
  return TypeMetadataStorage.getObjectTypesMetadata().find((t) => t.target.name === declared)?.name;
}

/** `@UseGuards`, `@UseInterceptors`, `@UseFilters` or `@UsePipes` on a class or a method. */
function hasOwnEnhancers(target: object): boolean {
  return [GUARDS_METADATA, INTERCEPTORS_METADATA, EXCEPTION_FILTERS_METADATA, PIPES_METADATA].some(
    (key) => ((Reflect.getMetadata(key, target) as unknown[] | undefined)?.length ?? 0) > 0,
  );
}

/**
 * The object type whose field a resolver method resolves: `Query` or `Mutation` for `@Query()` and
 * `@Mutation()`, the class's type for `@ResolveField()`; undefined for anything else (subscriptions
 * keep Nest's path: graphql-ws.server.ts drives them).
 */
function fieldOwner(
  schema: GraphQLSchema,
  fn: object,
  classType: GraphQLObjectType | undefined,
): GraphQLObjectType | undefined {
  if (Reflect.getMetadata(RESOLVER_PROPERTY_METADATA, fn) === true) {
    return classType;
  }
  const root: unknown = Reflect.getMetadata(RESOLVER_TYPE_METADATA, fn);
  if (root === 'Query') {
    return schema.getQueryType() ?? undefined;
  }
  if (root === 'Mutation') {
    return schema.getMutationType() ?? undefined;
  }
  return undefined;
}

/**
 * Resolver methods called by graphql-js directly, without Nest's per-call pipeline.
 *
 * What Nest does around a resolver call here adds nothing for GraphQL: `fieldResolverEnhancers` is
 * empty, so field resolvers get no guard, interceptor or filter; the global guards (auth, OAuth
 * scopes, rate limits) pass every GraphQL call through, because GraphQL authorization is the `@auth`
 * directive (auth.directive.ts, which wraps these resolvers afterwards) and its limits are Apollo
 * plugins; the global exception filter hands GraphQL errors back unchanged. What remains is
 * building the parameters and running the global validation pipe on each `@Args`: about 6 µs per
 * call even for a field that reads one property, 20 times for `users { posts }`
 * (docs/performance.md).
 *
 * So for a `@Query()`, `@Mutation()` or `@ResolveField()` method whose parameters are only
 * `@Parent()`, `@Context()`, `@Info()` and named `@Args('name')` of scalar or enum GraphQL types
 * (with the global pipe's text check on strings), this builds the same parameters itself and calls
 * the method. Anything else keeps Nest's path: input classes (validated by the pipe), pipes, guards,
 * interceptors or filters of its own (`@UsePipes`, `@UseGuards`...), custom parameter decorators,
 * request-scoped providers, subscriptions. Returns the fields switched (`Type.field`).
 */
export function callFieldResolversDirectly(
  schema: GraphQLSchema,
  modules: ModulesContainer,
): string[] {
  const switched: string[] = [];
  for (const module of modules.values()) {
    for (const wrapper of module.providers.values()) {
      const instance = wrapper.instance as Record<string, unknown> | undefined;
      if (
        !instance ||
        !wrapper.isDependencyTreeStatic() ||
        typeof wrapper.metatype !== 'function'
      ) {
        continue;
      }
      const cls: object = instance.constructor;
      const typeName = parentTypeName(schema, cls);
      const named = typeName ? schema.getType(typeName) : undefined;
      const type = named && isObjectType(named) ? named : undefined;
      const prototype = Object.getPrototypeOf(instance) as Record<string, unknown>;
      if (hasOwnEnhancers(cls)) {
        continue;
      }
      for (const method of Object.getOwnPropertyNames(prototype)) {
        const fn: unknown = Object.getOwnPropertyDescriptor(prototype, method)?.value; // not getters
        if (method === 'constructor' || typeof fn !== 'function' || hasOwnEnhancers(fn)) {
          continue;
        }
        const owner = fieldOwner(schema, fn, type);
        if (!owner) {
          continue;
        }
        const fieldName = (Reflect.getMetadata(RESOLVER_NAME_METADATA, fn) as string) ?? method;
        const field = owner.getFields()[fieldName];
        const params = (Reflect.getMetadata(PARAM_ARGS_METADATA, cls, method) ?? {}) as Record<
          string,
          ParamMetadata
        >;
        const pickers = field && argumentPickers(prototype, method, params, field);
        if (!field || !pickers) {
          continue;
        }
        const call = fn as (...a: unknown[]) => unknown;
        const resolve: GraphQLFieldResolver<unknown, unknown> = (parent, args, ctx, info) =>
          call.apply(
            instance,
            pickers.map((pick) => pick(parent, args, ctx, info)),
          );
        field.resolve = resolve;
        switched.push(`${owner.name}.${fieldName}`);
      }
    }
  }
  return switched;
}
