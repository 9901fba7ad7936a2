import { createRequire } from 'node:module';
import {
  execute,
  GraphQLError,
  Kind,
  locatedError,
  OperationTypeNode,
  type DocumentNode,
  type ExecutionResult,
  type GraphQLSchema,
  type OperationDefinitionNode,
} from 'graphql';
import type { CompiledQuery, compileQuery as CompileQuery } from 'graphql-jit';

// graphql-jit's ESM build imports its own files without extensions, which Node's ESM loader refuses:
// its CommonJS build is loaded, and it requires `graphql`'s CommonJS files, the same ones
// `import 'graphql'` resolves to here (graphql 16 publishes no `exports` map, so Node takes `main`).
// `sameGraphql()` checks that at boot: a second copy would give a second GraphQLError class.
const require = createRequire(import.meta.url);
const jit = require('graphql-jit') as { compileQuery: typeof CompileQuery };

/** True when graphql-jit runs on the same `graphql` module as the rest of the application. */
export function sameGraphql(): boolean {
  const theirs = require('graphql') as { GraphQLError: unknown };
  return theirs.GraphQLError === GraphQLError;
}

/** What one execution needs: the request's document, operation, variables and context. */
export interface ExecutionRequest {
  schema: GraphQLSchema;
  document: DocumentNode;
  /** The query text: the compile cache's key (undefined: not cached, compiled every time). */
  query: string | undefined;
  operationName: string | null | undefined;
  variables: Record<string, unknown> | undefined;
  contextValue: unknown;
}

type Compiled = CompiledQuery | 'graphql-js';

/**
 * Runs operations through graphql-jit (a document compiled once into a JavaScript function) and keeps
 * graphql-js's answers: the same data, and errors of the same class, message, path, locations and
 * extensions (the differential test, execution.e2e-spec.ts, compares both on every operation).
 * graphql-js runs what the compiler does not take: documents it refuses, introspection, and any
 * request error (variables that do not coerce, no such operation): graphql-js reports those before
 * a resolver runs, so running it again changes nothing.
 */
export class CompiledExecutor {
  /** Compiled documents by operation name and query text, most recently used last. */
  private readonly cache = new Map<string, Compiled>();
  /** Operations answered by compiled code, and by graphql-js (tests read them). */
  readonly runs = { compiled: 0, graphqlJs: 0 };

  constructor(private readonly maxDocuments = 1000) {}

  /** Documents in the compile cache. */
  get size(): number {
    return this.cache.size;
  }

  async execute(request: ExecutionRequest): Promise<ExecutionResult> {
    const compiled = this.compiled(request);
    if (compiled === 'graphql-js') {
      this.runs.graphqlJs += 1;
      return graphqlJs(request);
    }
    const result = await compiled.query(undefined, request.contextValue, request.variables ?? {});
    if (!('data' in result)) {
      // a request error (variables): graphql-js's own message and shape
      this.runs.graphqlJs += 1;
      return graphqlJs(request);
    }
    this.runs.compiled += 1;
    return result.errors ? { ...result, errors: result.errors.map(asGraphqlJsError) } : result;
  }

  private compiled(request: ExecutionRequest): Compiled {
    // no name and an empty name are different requests (graphql-js: the only operation, or none)
    const asked = request.operationName;
    const name = asked === null || asked === undefined ? '' : `=${asked}`;
    const key = request.query === undefined ? undefined : `${name}\u0000${request.query}`;
    if (key !== undefined) {
      const hit = this.cache.get(key);
      if (hit !== undefined) {
        this.cache.delete(key);
        this.cache.set(key, hit);
        return hit;
      }
    }
    const compiled = compile(request);
    if (key !== undefined) {
      if (this.cache.size >= this.maxDocuments) {
        this.cache.delete(this.cache.keys().next().value as string);
      }
      this.cache.set(key, compiled);
    }
    return compiled;
  }
}

function compile({ schema, document, operationName }: ExecutionRequest): Compiled {
  const operation = selectedOperation(document, operationName);
  if (
    !operation ||
    operation.operation === OperationTypeNode.SUBSCRIPTION ||
    isIntrospection(operation)
  ) {
    return 'graphql-js';
  }
  try {
    const compiled = jit.compileQuery(schema, document, operationName ?? undefined, {
      // stack traces are never sent; their capture costs a few µs per error
      disablingCapturingStackErrors: true,
    });
    return 'query' in compiled ? compiled : 'graphql-js';
  } catch {
    return 'graphql-js';
  }
}

function graphqlJs(request: ExecutionRequest): Promise<ExecutionResult> | ExecutionResult {
  return execute({
    schema: request.schema,
    document: request.document,
    variableValues: request.variables,
    operationName: request.operationName,
    contextValue: request.contextValue,
  });
}

function selectedOperation(
  document: DocumentNode,
  name: string | null | undefined,
): OperationDefinitionNode | undefined {
  const operations = document.definitions.filter(
    (d): d is OperationDefinitionNode => d.kind === Kind.OPERATION_DEFINITION,
  );
  // as graphql-js: an empty name is a name (no operation has it), only null/undefined is none
  if (name !== null && name !== undefined) {
    return operations.find((o) => o.name?.value === name);
  }
  return operations.length === 1 ? operations[0] : undefined;
}

/** `{ __schema }` and `{ __type }` at the root: rare, large, answered by graphql-js. */
function isIntrospection(operation: OperationDefinitionNode): boolean {
  return operation.selectionSet.selections.some(
    (s) => s.kind === Kind.FIELD && (s.name.value === '__schema' || s.name.value === '__type'),
  );
}

interface JitError {
  message: string;
  locations?: readonly { line: number; column: number }[];
  path?: readonly (string | number)[];
  originalError?: unknown;
}

/**
 * graphql-jit's error as graphql-js would have made it: `locatedError` of what the resolver threw (a
 * GraphQLError that already has a path unchanged; otherwise its message, extensions and the original
 * as `originalError`), or, for a null in a non-null field or a value that does not serialize (no
 * original), an Error with the message graphql-js gives.
 */
function asGraphqlJsError(error: GraphQLError): GraphQLError {
  const e = error as unknown as JitError;
  const original = e.originalError instanceof Error ? e.originalError : new Error(e.message);
  const located = locatedError(original, undefined, e.path);
  if (located !== original && e.locations) {
    // the field's position, which graphql-js takes from the field nodes it has and jit does not pass
    (located as { locations?: JitError['locations'] }).locations = e.locations;
  }
  return located;
}
