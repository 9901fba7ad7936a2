import {
  execute,
  executeSync,
  type ExecutionArgs,
  OperationTypeNode,
  type DocumentNode,
  type ExecutionResult,
  type GraphQLSchema,
  type OperationDefinitionNode,
} from 'graphql';
import { isIntrospectionOnly } from './operation-rules.js';
import { jsonSizeOf } from './response-size.js';

/** Answers kept per schema: at most this many, and this many bytes of JSON in all. */
const MAX_ENTRIES = 64;
const MAX_BYTES = 16 * 1024 * 1024;

interface Entry {
  result: ExecutionResult;
  bytes: number;
}

interface SchemaCache {
  entries: Map<string, Entry>;
  bytes: number;
}

const caches = new WeakMap<GraphQLSchema, SchemaCache>();

/** A query whose root selects only `__schema`, `__type` and `__typename`. */
export function isIntrospectionQuery(
  document: DocumentNode,
  operation: OperationDefinitionNode | null | undefined,
): boolean {
  return (
    operation?.operation === OperationTypeNode.QUERY && isIntrospectionOnly(document, operation)
  );
}

function keyOf(
  source: string,
  operationName: string | null | undefined,
  variables: Readonly<Record<string, unknown>> | null | undefined,
): string {
  return `${operationName ?? ''}\u0000${variables ? JSON.stringify(variables) : ''}\u0000${source}`;
}

/**
 * True when introspectionResult would answer this query from memory without executing it (the
 * operation gate charges such an answer less: cost.ts `cachedIntrospectionCost`).
 */
export function introspectionCached(
  schema: GraphQLSchema,
  source: string,
  operationName: string | null | undefined,
  variables: Readonly<Record<string, unknown>> | null | undefined,
): boolean {
  return caches.get(schema)?.entries.has(keyOf(source, operationName, variables)) ?? false;
}

/**
 * The answer to an introspection-only query (isIntrospectionQuery), executed once per schema and
 * distinct document text, operation name and variables, then served from memory: the schema never
 * changes while running, so neither does the answer. Answers with errors are not kept. The caller
 * must not modify the result (copy it to add members).
 */
export function introspectionResult(
  schema: GraphQLSchema,
  document: DocumentNode,
  source: string,
  operationName: string | null | undefined,
  variables: Readonly<Record<string, unknown>> | null | undefined,
): ExecutionResult {
  let cache = caches.get(schema);
  if (!cache) {
    cache = { entries: new Map(), bytes: 0 };
    caches.set(schema, cache);
  }
  const key = keyOf(source, operationName, variables);
  const hit = cache.entries.get(key);
  if (hit) {
    // most recently used last: the oldest are evicted first
    cache.entries.delete(key);
    cache.entries.set(key, hit);
    return hit.result;
  }
  const result = executeSync({
    schema,
    document,
    operationName,
    variableValues: variables ?? undefined,
  });
  if (result.errors?.length) {
    return result;
  }
  const bytes = key.length + (result.data ? jsonSizeOf(result.data) : 0);
  if (bytes > MAX_BYTES / 4) {
    return result;
  }
  cache.entries.set(key, { result, bytes });
  cache.bytes += bytes;
  for (const [oldest, entry] of cache.entries) {
    if (cache.entries.size <= MAX_ENTRIES && cache.bytes <= MAX_BYTES) {
      break;
    }
    cache.entries.delete(oldest);
    cache.bytes -= entry.bytes;
  }
  return result;
}

/**
 * graphql-js `execute`, or, for an introspection-only query whose text is `source`, its cached
 * answer (the WebSocket server's operations; over HTTP the GraphQL module does the same).
 */
export function executeOrCached(
  args: ExecutionArgs,
  source: string | undefined,
): ReturnType<typeof execute> {
  return source === undefined
    ? execute(args)
    : introspectionResult(
        args.schema,
        args.document,
        source,
        args.operationName,
        args.variableValues,
      );
}
