/** What resolver modules need from the GraphQL layer (see docs/graphql.md "How to add a type"). */
export type { GqlContext, OperationCost } from './context.js';
export { LoaderRegistry, byId, byKey, groupBy } from './loaders.js';
export { Node, NodeRegistry, typeNameOf, type NodeFetcher } from './node.js';
export {
  Connection,
  OrderDirection,
  PageInfo,
  connectionFromRows,
  decodeCursor,
  encodeCursor,
  keysetSql,
  pageWindow,
  type ConnectionValue,
  type PageArgs,
  type PageWindow,
} from './connection.js';
export { DateTimeScalar } from './scalars/date-time.scalar.js';
export { Role } from './role.graphql.js';
export { GRAPHQL_PATH } from './graphql-ws.server.js';
export { MAX_QUERY_COST } from './cost.js';
export { MAX_DEPTH } from './depth-limit.rule.js';
