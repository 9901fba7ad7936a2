import { Logger } from '@nestjs/common';
import { unwrapResolverError } from '@apollo/server/errors';
import { GraphQLError, type GraphQLFormattedError } from 'graphql';
import { DomainError, type ErrorCode, type ErrorDetail } from '../common/errors.js';
import { toDomainError } from '../common/http-exception.filter.js';

/** The `extensions.code` values of docs/contract.md section 6. */
export type GqlErrorCode =
  | 'UNAUTHENTICATED'
  | 'FORBIDDEN'
  | 'NOT_FOUND'
  | 'BAD_USER_INPUT'
  | 'CONFLICT'
  | 'RATE_LIMITED'
  | 'QUERY_TOO_COMPLEX'
  | 'INTERNAL_SERVER_ERROR';

const CONTRACT_CODES = new Set<string>([
  'UNAUTHENTICATED',
  'FORBIDDEN',
  'NOT_FOUND',
  'BAD_USER_INPUT',
  'CONFLICT',
  'RATE_LIMITED',
  'QUERY_TOO_COMPLEX',
  'INTERNAL_SERVER_ERROR',
]);

/** The one mapping from domain error codes to GraphQL codes (CONTRIBUTING.md, house style 5). */
export function gqlCodeOf(code: ErrorCode): GqlErrorCode {
  switch (code) {
    case 'unauthorized':
      return 'UNAUTHENTICATED';
    case 'forbidden':
    case 'insufficient_scope':
      return 'FORBIDDEN';
    case 'not_found':
      return 'NOT_FOUND';
    case 'bad_request':
    case 'unsupported_version':
    case 'validation_failed':
    case 'method_not_allowed':
    case 'not_acceptable':
    case 'payload_too_large':
    case 'unsupported_media_type':
      return 'BAD_USER_INPUT';
    case 'conflict':
    case 'precondition_failed':
    case 'idempotency_key_in_progress': // REST only (docs/idempotency.md)
    case 'idempotency_key_reused':
      return 'CONFLICT';
    case 'rate_limited':
      return 'RATE_LIMITED';
    case 'query_too_complex':
      return 'QUERY_TOO_COMPLEX';
    case 'internal_error':
    case 'service_unavailable': // the contract has no GraphQL code of its own for it
      return 'INTERNAL_SERVER_ERROR';
  }
}

/**
 * Apollo's and graphql-js's own request errors (parse, validation, variable coercion, bad request)
 * all mean "fix your request": BAD_USER_INPUT, with Apollo's code kept in `extensions.reason`.
 */
const APOLLO_REQUEST_CODES = new Set([
  'GRAPHQL_PARSE_FAILED',
  'GRAPHQL_VALIDATION_FAILED',
  'BAD_USER_INPUT',
  'BAD_REQUEST',
  'OPERATION_RESOLUTION_FAILURE',
  'PERSISTED_QUERY_NOT_FOUND',
  'PERSISTED_QUERY_NOT_SUPPORTED',
]);

const CONTEXT_FAILED = 'Context creation failed: ';
const logger = new Logger('GraphQL');

interface Formatted extends GraphQLFormattedError {
  extensions?: {
    code: GqlErrorCode;
    details?: ErrorDetail[];
    reason?: string;
    [k: string]: unknown;
  };
}

function withCode(
  formatted: GraphQLFormattedError,
  code: GqlErrorCode,
  message: string,
  extra: Record<string, unknown> = {},
): Formatted {
  return {
    message,
    ...(formatted.locations ? { locations: formatted.locations } : {}),
    ...(formatted.path ? { path: formatted.path } : {}),
    extensions: { code, ...extra },
  };
}

/**
 * Apollo `formatError`: every error leaves with a contract code, `details` for input errors, and
 * nothing internal (no stack, no SQL, no driver message). Unexpected errors are logged here.
 */
export function formatGraphqlError(
  formatted: GraphQLFormattedError,
  error: unknown,
): GraphQLFormattedError {
  const original = unwrapResolverError(error);
  const message = formatted.message.startsWith(CONTEXT_FAILED)
    ? formatted.message.slice(CONTEXT_FAILED.length)
    : formatted.message;

  const domain = original instanceof DomainError ? original : toDomainError(original);
  if (domain) {
    const code = gqlCodeOf(domain.code);
    if (code === 'INTERNAL_SERVER_ERROR') {
      return withCode(formatted, code, 'Internal server error');
    }
    return withCode(
      formatted,
      code,
      domain.message,
      domain.details?.length ? { details: domain.details } : {},
    );
  }

  // our own GraphQLErrors (auth, cost, depth, scalars) carry a contract code, possibly wrapped by Apollo
  const candidates = [original, (original as GraphQLError | undefined)?.originalError];
  for (const candidate of candidates) {
    const code = candidate instanceof GraphQLError ? candidate.extensions.code : undefined;
    if (typeof code === 'string' && CONTRACT_CODES.has(code) && code !== 'BAD_USER_INPUT') {
      const { http: _http, code: _code, ...extra } = (candidate as GraphQLError).extensions;
      return withCode(formatted, code as GqlErrorCode, message, extra);
    }
  }

  const apolloCode = formatted.extensions?.code;
  if (typeof apolloCode === 'string' && APOLLO_REQUEST_CODES.has(apolloCode)) {
    const details =
      (original as GraphQLError | undefined)?.originalError instanceof GraphQLError
        ? ((original as GraphQLError).originalError as GraphQLError).extensions.details
        : formatted.extensions?.details;
    return withCode(formatted, 'BAD_USER_INPUT', message, {
      reason: apolloCode,
      ...(Array.isArray(details) ? { details } : {}),
    });
  }

  // Apollo's own request errors without a code but with a 4xx status (a persisted query whose hash
  // does not match, an unsupported persisted query version): the client's fault, not ours
  const status = (original as GraphQLError | undefined)?.extensions?.http as
    | { status?: number }
    | undefined;
  if (
    original instanceof GraphQLError &&
    original.extensions.code === undefined &&
    typeof status?.status === 'number' &&
    status.status >= 400 &&
    status.status < 500
  ) {
    return withCode(formatted, 'BAD_USER_INPUT', message, { reason: 'BAD_REQUEST' });
  }

  logger.error({ err: original }, 'unexpected GraphQL error');
  return withCode(formatted, 'INTERNAL_SERVER_ERROR', 'Internal server error');
}
