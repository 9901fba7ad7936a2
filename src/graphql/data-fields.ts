import { isObjectType, type GraphQLField, type GraphQLSchema } from 'graphql';

/**
 * The field extension (`@Extensions({ [MAY_BE_PROMISE]: true })`) of a field whose value may be a
 * promise (a connection's `totalCount`, `PageInfo.hasNextPage`/`hasPreviousPage`, computed only
 * when selected): it keeps a resolver, which is what awaits the promise in compiled execution.
 */
export const MAY_BE_PROMISE = 'mayBePromise';

/**
 * Drops the resolver Nest gives every `@Field` of an object type (`rootFieldResolver`: the
 * property, or the field's `defaultValue` when it is undefined) where it is exactly a property
 * read: then graphql-jit reads the property inline, and graphql-js's default resolver reads it.
 * With a resolver, graphql-jit compiles a resolver call for every object it completes (two
 * closures, an arguments object, a resolve info with its path, a promise check): a page of 20
 * users made ~100 such calls for `id`, `name`, `totalCount` and the posts' fields.
 *
 * A resolver is dropped only when calling it shows a plain read of the field's own name with no
 * default value, and the field is not marked `MAY_BE_PROMISE`: compiled code reads an inline value
 * as it is and does not await it. Runs on the built schema before any wrapper (`@auth`, the
 * response-size guard, the plain resolvers) is put around a field's resolver.
 */
export function plainDataFields(schema: GraphQLSchema): GraphQLSchema {
  for (const type of Object.values(schema.getTypeMap())) {
    if (!isObjectType(type) || type.name.startsWith('__')) {
      continue;
    }
    for (const field of Object.values(type.getFields())) {
      if (isPropertyRead(field) && field.extensions[MAY_BE_PROMISE] !== true) {
        field.resolve = undefined;
      }
    }
  }
  return schema;
}

/** Is `field.resolve` Nest's resolver of a property of the field's own name, without a default? */
function isPropertyRead(field: GraphQLField<unknown, unknown>): boolean {
  const resolve = field.resolve as ((source: unknown) => unknown) | undefined;
  if (resolve?.name !== 'rootFieldResolver' || resolve.length !== 1) {
    return false;
  }
  const value = {};
  return resolve({ [field.name]: value }) === value && resolve({}) === undefined;
}
