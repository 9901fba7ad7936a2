import { buildSubgraphSchema } from '@apollo/subgraph';
import { printSchemaWithDirectives } from '@graphql-tools/utils';
import {
  concatAST,
  isEnumType,
  isInterfaceType,
  isObjectType,
  isScalarType,
  isSpecifiedScalarType,
  isUnionType,
  Kind,
  parse,
  visit,
  type ConstDirectiveNode,
  type GraphQLSchema,
  type ObjectTypeDefinitionNode,
} from 'graphql';
import { DomainError } from '../../common/errors.js';
import type { GqlContext } from '../context.js';
import type { NodeRegistry } from '../node.js';
import { typeNameOf } from '../node.js';

/** The types other subgraphs may extend: each is found again by its id, as `node(id)` finds it. */
const ENTITY_TYPES: readonly string[] = ['User', 'Post', 'Order', 'Room', 'Message'];

/**
 * Federation 2.9 is the first to define `@cost(weight:)` and `@listSize`: importing `@cost` makes
 * Atrium's cost directive (the same definition, on fewer locations) the federation one.
 */
const FEDERATION_LINK = parse(
  'extend schema @link(url: "https://specs.apollo.dev/federation/v2.9", import: ["@key", "@cost"])',
);

const KEY_ID: ConstDirectiveNode = {
  kind: Kind.DIRECTIVE,
  name: { kind: Kind.NAME, value: 'key' },
  arguments: [
    {
      kind: Kind.ARGUMENT,
      name: { kind: Kind.NAME, value: 'fields' },
      value: { kind: Kind.STRING, value: 'id' },
    },
  ],
};

type ResolverMap = Record<string, Record<string, unknown>>;

/**
 * The executable parts of a built schema as a resolver map (field resolvers and subscribers,
 * abstract types' resolveType, custom scalars, enum values), to attach to the same types built
 * again from SDL.
 */
function resolversOf(schema: GraphQLSchema): ResolverMap {
  const map: ResolverMap = {};
  for (const type of Object.values(schema.getTypeMap())) {
    if (type.name.startsWith('__')) {
      continue;
    }
    if (isObjectType(type)) {
      const fields: Record<string, unknown> = {};
      for (const field of Object.values(type.getFields())) {
        if (field.resolve || field.subscribe) {
          fields[field.name] = { resolve: field.resolve, subscribe: field.subscribe };
        }
      }
      if (type.isTypeOf) {
        fields.__isTypeOf = type.isTypeOf;
      }
      map[type.name] = fields;
    } else if ((isInterfaceType(type) || isUnionType(type)) && type.resolveType) {
      map[type.name] = { __resolveType: type.resolveType };
    } else if (isScalarType(type) && !isSpecifiedScalarType(type)) {
      map[type.name] = {
        serialize: type.serialize,
        parseValue: type.parseValue,
        parseLiteral: type.parseLiteral,
      };
    } else if (isEnumType(type)) {
      map[type.name] = Object.fromEntries(type.getValues().map((v) => [v.name, v.value]));
    }
  }
  return map;
}

/**
 * The schema as an Apollo Federation 2 subgraph (GRAPHQL_FEDERATION=true, docs/graphql.md
 * "Federation"): the same types, fields, directives and resolvers, plus `@key(fields: "id")` on
 * ENTITY_TYPES and the `_service` and `_entities` root fields of `@apollo/subgraph`.
 *
 * An entity is looked up exactly as `node(id)` looks it up: through the NodeRegistry's fetcher for
 * its id prefix (the read rules of the type's own root field), `_entities` and `_service` carry
 * `node`'s `@auth` (role and scopes, applied by the auth transformer that runs after this), and the
 * cost rule counts `_entities` like a list of as many `node` results as it has representations
 * (cost.ts). A representation whose id names another type resolves to null, as an unknown id (or one
 * the caller may not read, which `node(id)` answers NOT_FOUND) does, without an error.
 */
export function asSubgraph(schema: GraphQLSchema, nodes: NodeRegistry): GraphQLSchema {
  const typeDefs = visit(parse(printSchemaWithDirectives(schema)), {
    ObjectTypeDefinition(node): ObjectTypeDefinitionNode | undefined {
      return ENTITY_TYPES.includes(node.name.value)
        ? { ...node, directives: [...(node.directives ?? []), KEY_ID] }
        : undefined;
    },
  });
  const resolvers = resolversOf(schema);
  for (const typeName of ENTITY_TYPES) {
    if (!schema.getType(typeName)) {
      throw new Error(`federation: the entity type ${typeName} is not in the schema`);
    }
    resolvers[typeName] = {
      ...resolvers[typeName],
      __resolveReference: async (reference: { id?: unknown }, ctx: GqlContext) => {
        if (typeof reference.id !== 'string') {
          return null;
        }
        const found = await nodes.fetch(ctx, reference.id).catch((error: unknown) => {
          // what node(id) reports as NOT_FOUND is a null entity: the router's convention
          if (error instanceof DomainError && error.code === 'not_found') {
            return undefined;
          }
          throw error;
        });
        return found && typeNameOf(found) === typeName ? found : null;
      },
    };
  }
  const subgraph = buildSubgraphSchema([
    { typeDefs: concatAST([FEDERATION_LINK, typeDefs]), resolvers: resolvers as never },
  ]);
  const query = subgraph.getQueryType();
  const auth = schema
    .getQueryType()
    ?.getFields()
    .node?.astNode?.directives?.filter((d) => d.name.value === 'auth');
  if (!query || !auth?.length) {
    throw new Error('federation: Query.node and its @auth are needed to guard _entities');
  }
  for (const name of ['_entities', '_service']) {
    const field = query.getFields()[name];
    if (field?.astNode) {
      field.astNode = {
        ...field.astNode,
        directives: [...(field.astNode.directives ?? []), ...auth],
      };
    }
  }
  return subgraph;
}
