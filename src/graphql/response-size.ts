import { MapperKind, mapSchema } from '@graphql-tools/utils';
import {
  defaultFieldResolver,
  getNamedType,
  GraphQLError,
  type GraphQLFieldConfig,
  type GraphQLFieldResolver,
  type GraphQLSchema,
} from 'graphql';

/**
 * The largest response to a query or mutation (docs/graphql.md "Limits"). The cost limit already
 * bounds what a query may ask for (about 50 post bodies); this cap bounds what it actually returns:
 * large text stops resolving once past it, and no answer over it is ever sent.
 */
export const MAX_RESPONSE_BYTES = 4 * 1024 * 1024;
/** The largest payload of one subscription event (each event re-executes the selection). */
export const MAX_EVENT_BYTES = 256 * 1024;

export function responseTooLarge(limit: number): GraphQLError {
  return new GraphQLError(
    `Response too large: the result exceeds ${limit} bytes; request fewer items (first/last) or fewer fields`,
    { extensions: { code: 'QUERY_TOO_COMPLEX', response: { limit } } },
  );
}

/** The JSON size of a leaf value (UTF-8 bytes of long strings; short ones by length). */
function leafSize(value: unknown): number {
  switch (typeof value) {
    case 'string':
      return (value.length > 64 ? Buffer.byteLength(value) : value.length) + 2;
    case 'number':
    case 'bigint':
      return 12;
    case 'boolean':
      return 5;
    default:
      return 4;
  }
}

/**
 * The JSON size of an execution result's `data`, without serializing it: strings in UTF-8 bytes plus
 * quotes, member names plus punctuation (an approximation that ignores JSON escapes). One pass over
 * what was resolved; no recursion, so no depth can overflow the stack.
 */
export function jsonSizeOf(data: unknown): number {
  let bytes = 0;
  const stack: unknown[] = [data];
  while (stack.length > 0) {
    const value = stack.pop();
    if (value === null || typeof value !== 'object') {
      bytes += leafSize(value);
    } else if (Array.isArray(value)) {
      bytes += 2 + value.length;
      for (const item of value) {
        stack.push(item);
      }
    } else {
      bytes += 2;
      for (const key in value) {
        bytes += key.length + 4;
        stack.push((value as Record<string, unknown>)[key]);
      }
    }
  }
  return bytes;
}

/**
 * Running size of the large text fields of one HTTP response (`GqlContext.responseSize`). The cost
 * limit bounds everything else a query can return to a small fraction of the cap; these fields are
 * what can make an answer large, so they are counted as they resolve, and once they alone pass the
 * cap no further one is resolved. The whole answer is measured once more after execution
 * (`jsonSizeOf`), and over the cap it is replaced by the one error.
 */
export class ResponseSize {
  private bytes = 0;
  exceeded = false;

  constructor(readonly limit: number) {}

  /** Throws once the cap has been passed: the next large field is not resolved at all. */
  check(): void {
    if (this.exceeded) {
      throw responseTooLarge(this.limit);
    }
  }

  add(value: unknown): void {
    this.bytes += leafSize(value);
    if (this.bytes > this.limit) {
      this.exceeded = true;
      throw responseTooLarge(this.limit);
    }
  }
}

/** `@cost` text fields: their values can be large (post bodies, message contents). */
function isLargeTextField(field: GraphQLFieldConfig<unknown, unknown>): boolean {
  const named = getNamedType(field.type);
  return (
    named.name === 'String' && !!field.astNode?.directives?.some((d) => d.name.value === 'cost')
  );
}

/**
 * What the wrapped resolvers read of the context (GqlContext has it; no import: context.ts imports
 * this file).
 */
interface SizedContext {
  responseSize?: ResponseSize;
}

/**
 * Wraps the resolvers of large text fields (and only those) so that an HTTP response's
 * `responseSize` counts them as they resolve. WebSocket contexts have no `responseSize`: there the
 * finished result is measured (graphql-ws.server.ts).
 */
export function guardLargeFields(schema: GraphQLSchema): GraphQLSchema {
  return mapSchema(schema, {
    [MapperKind.OBJECT_FIELD]: (field) => {
      if (!isLargeTextField(field)) {
        return field;
      }
      const resolve: GraphQLFieldResolver<unknown, SizedContext | undefined> =
        field.resolve ?? defaultFieldResolver;
      field.resolve = (source, args, ctx: SizedContext | undefined, info) => {
        const size = ctx?.responseSize;
        if (!size) {
          return resolve(source, args, ctx, info);
        }
        size.check();
        const value: unknown = resolve(source, args, ctx, info);
        if (value instanceof Promise) {
          return value.then((v: unknown) => {
            size.add(v);
            return v;
          });
        }
        size.add(value);
        return value;
      };
      return field;
    },
  });
}
