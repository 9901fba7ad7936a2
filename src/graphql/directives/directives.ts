import {
  DirectiveLocation,
  GraphQLBoolean,
  GraphQLDirective,
  GraphQLEnumType,
  GraphQLInt,
  GraphQLNonNull,
  GraphQLList,
  GraphQLSchema,
  GraphQLString,
  type GraphQLEnumType as EnumType,
} from 'graphql';

/**
 * Custom directives. `@cost` and `@cacheControl` are declared in `buildSchemaOptions.directives`;
 * `@auth` is added by `withAuthDirective` once the schema exists, because its argument must be the
 * schema's own `Role` enum (a second type named Role would clash: graphql-js refuses two types of one name).
 *
 * Attach them with Nest's `@Directive('@auth(requires: ADMIN, scopes: ["users:read"])')`,
 * `@Directive('@cost(weight: 5)')`, `@Directive('@cacheControl(maxAge: 60)')`.
 */
const CacheControlScope = new GraphQLEnumType({
  name: 'CacheControlScope',
  values: { PUBLIC: { value: 'PUBLIC' }, PRIVATE: { value: 'PRIVATE' } },
});

/** Apollo Server's cache hints (read by its cache control plugin). maxAge is in seconds. */
export const cacheControlDirective = new GraphQLDirective({
  name: 'cacheControl',
  description:
    'Caching hint: the response Cache-Control is the most restrictive hint of the fields resolved.',
  locations: [
    DirectiveLocation.FIELD_DEFINITION,
    DirectiveLocation.OBJECT,
    DirectiveLocation.INTERFACE,
    DirectiveLocation.UNION,
  ],
  args: {
    maxAge: { type: GraphQLInt },
    scope: { type: CacheControlScope },
    inheritMaxAge: { type: GraphQLBoolean },
  },
});

/**
 * The GraphQL cost specification's `@cost(weight:)` (ibm.github.io/graphql-specs/cost-spec.html), the
 * definition Apollo Federation 2.9+ imports too, so the schema composes into a supergraph (a
 * `@cost(complexity:)` of our own made composition fail). Only its FIELD_DEFINITION use is read
 * (cost.ts); list sizes come from `first`/`last`, what the spec's `@listSize(slicingArguments:)` says.
 */
export const costDirective = new GraphQLDirective({
  name: 'cost',
  description:
    "Replaces the field's own cost (default 1, scalars included) in the query cost: large text fields cost more.",
  locations: [DirectiveLocation.FIELD_DEFINITION],
  args: { weight: { type: new GraphQLNonNull(GraphQLInt) } },
});

export const AUTH_DIRECTIVE = 'auth';

/**
 * Adds `directive @auth(requires: Role, scopes: [String!]) on FIELD_DEFINITION | OBJECT` using the
 * schema's `Role` enum. Every root field declares both (who may call it, and what an OAuth access
 * token needs); every object type declares the scopes it takes to read it (docs/oauth.md).
 */
export function withAuthDirective(schema: GraphQLSchema): GraphQLSchema {
  const role = schema.getType('Role') as EnumType | undefined;
  if (!role) {
    throw new Error('the Role enum must be registered before @auth can be declared');
  }
  const auth = new GraphQLDirective({
    name: AUTH_DIRECTIVE,
    description:
      'On a root field: the lowest role that may call it (ADMIN > USER > GUEST) and the scopes an OAuth access token needs (`[]`: any). On an object type: the scopes an OAuth access token needs to read it. First-party tokens, Basic and API keys are not limited by scopes.',
    locations: [DirectiveLocation.FIELD_DEFINITION, DirectiveLocation.OBJECT],
    args: {
      requires: { type: role },
      scopes: { type: new GraphQLList(new GraphQLNonNull(GraphQLString)) },
    },
  });
  const config = schema.toConfig();
  return new GraphQLSchema({ ...config, directives: [...config.directives, auth] });
}
