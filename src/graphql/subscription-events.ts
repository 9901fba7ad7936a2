import type { ExecutionResult } from 'graphql';

/** The serialized size of a result in UTF-8 bytes (what graphql-ws will send). */
export function jsonSize(result: ExecutionResult): number {
  return Buffer.byteLength(JSON.stringify(result));
}

interface Mapped {
  result: ExecutionResult;
  /** Ends the stream after this result. */
  last: boolean;
}

/**
 * Maps a subscription's source events through `map` (charge, execute, cap), like graphql-js's own
 * mapping of events to responses: `return()` reaches the source at once even while it waits for an
 * event, so an unsubscribe never waits for the next event.
 */
export function mapEvents(
  source: AsyncIterable<unknown>,
  map: (payload: unknown) => Promise<Mapped>,
): AsyncIterableIterator<ExecutionResult> {
  const iterator = source[Symbol.asyncIterator]();
  let finished = false;
  const close = async (): Promise<void> => {
    finished = true;
    if (typeof iterator.return === 'function') {
      try {
        await iterator.return();
      } catch {
        // the source is gone either way
      }
    }
  };
  const generator: AsyncIterableIterator<ExecutionResult> = {
    async next(): Promise<IteratorResult<ExecutionResult, undefined>> {
      if (finished) {
        return { value: undefined, done: true };
      }
      const event = await iterator.next();
      if (event.done || finished) {
        finished = true;
        return { value: undefined, done: true };
      }
      try {
        const mapped = await map(event.value);
        if (mapped.last) {
          await close();
        }
        return { value: mapped.result, done: false };
      } catch (err) {
        await close();
        throw err;
      }
    },
    async return(): Promise<IteratorResult<ExecutionResult, undefined>> {
      await close();
      return { value: undefined, done: true };
    },
    async throw(err: unknown): Promise<IteratorResult<ExecutionResult, undefined>> {
      await close();
      throw err;
    },
    [Symbol.asyncIterator]() {
      return generator;
    },
  };
  return generator;
}

export function isAsyncIterable(value: unknown): value is AsyncIterable<unknown> {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as Record<symbol, unknown>)[Symbol.asyncIterator] === 'function'
  );
}
