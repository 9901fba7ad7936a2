import { GraphQLError } from 'graphql';

/**
 * The largest response to a query or mutation (docs/graphql.md "Limits"). The cost limit already
 * bounds what a query may ask for (about 50 post bodies); this cap bounds what it actually returns,
 * measured while resolving, so no answer is ever built or sent past it.
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

/** The JSON size of a resolved value, without serializing it; objects count by their own fields. */
function sizeOf(value: unknown): number {
  switch (typeof value) {
    case 'string':
      // UTF-8 bytes of long strings; short ones by length (close enough, and cheap)
      return (value.length > 64 ? Buffer.byteLength(value) : value.length) + 2;
    case 'number':
    case 'bigint':
      return 12;
    case 'boolean':
      return 5;
    case 'object':
      if (Array.isArray(value)) {
        let n = 2;
        for (const item of value) {
          n += (item !== null && typeof item === 'object' ? 2 : sizeOf(item)) + 1;
        }
        return n;
      }
      return value === null ? 4 : 2;
    default:
      return 4;
  }
}

/**
 * Running size of one response, fed by every resolved field (Apollo's willResolveField). Once over
 * the limit, `check` throws, so the resolvers still pending do not run; the response is then
 * replaced by the one error.
 */
export class ResponseSize {
  private bytes = 0;
  exceeded = false;

  constructor(readonly limit: number) {}

  add(key: string | number, value: unknown): void {
    this.bytes += sizeOf(value) + (typeof key === 'string' ? key.length + 4 : 1);
    if (this.bytes > this.limit) {
      this.exceeded = true;
    }
  }

  check(): void {
    if (this.exceeded) {
      throw responseTooLarge(this.limit);
    }
  }
}
