import type { Logger } from '@nestjs/common';
import { GraphQLError, type GraphQLFormattedError } from 'graphql';

/** The error of an operation whose credentials lapsed (the socket is closed with 4403 too). */
export function credentialsLapsed(): GraphQLError {
  return new GraphQLError('Credentials no longer valid', {
    extensions: { code: 'UNAUTHENTICATED' },
  });
}

/** System error codes of a write to a peer that has gone (the socket was reset or closed). */
const GONE_CODES = new Set(['ECONNRESET', 'EPIPE', 'ECONNABORTED', 'ERR_STREAM_DESTROYED']);

/**
 * Whether an operation's errors are only the failure to write to a socket whose client went away
 * (graphql-ws reports a failed `send` as an error of the operation, its message the system error's).
 */
export function clientWentAway(errors: readonly GraphQLError[]): boolean {
  return (
    errors.length > 0 &&
    errors.every((e) => {
      const cause = (e.originalError ?? (e as { cause?: unknown }).cause) as
        | { code?: unknown }
        | undefined;
      // the code of the system error, or of its message ("write ECONNRESET") when only that is left
      const code =
        typeof cause?.code === 'string' ? cause.code : /^write (E[A-Z]+)/.exec(e.message)?.[1];
      return code !== undefined && GONE_CODES.has(code);
    })
  );
}

/**
 * The client dropped its socket while an event was being written (write ECONNRESET, EPIPE): nothing
 * is wrong with the server and nothing can be sent any more, so an `info` line, not an error.
 */
export function wentAway(
  logger: Logger,
  operation: string,
  errors: readonly GraphQLError[],
): GraphQLFormattedError[] {
  logger.log(
    { operation, err: errors[0]?.message },
    'subscriber went away while an event was being sent',
  );
  return errors.map((e) => ({ message: e.message }));
}
