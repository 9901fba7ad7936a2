import { Logger } from '@nestjs/common';
import { unwrapResolverError } from '@apollo/server/errors';
import { GraphQLError, type GraphQLFormattedError } from 'graphql';
import { DomainError, type ErrorCode, type ErrorDetail } from '../common/errors.js';
import { toDomainError } from '../http/http-exception.filter.js';

/**
 * The `extensions.code` values of docs/contract.md section 6: ours for domain errors, and Apollo's
 * standard codes for request errors (what Apollo Client and Studio users match on).
 */
type GqlErrorCode =
  | 'UNAUTHENTICATED'
  | 'FORBIDDEN'
  | 'NOT_FOUND'
  | 'BAD_USER_INPUT'
  | 'CONFLICT'
  | 'RATE_LIMITED'
  | 'QUERY_TOO_COMPLEX'
  | 'RESYNC_REQUIRED'
  | 'INTERNAL_SERVER_ERROR'
  | ApolloRequestCode;

/** Apollo Server's request error codes (`ApolloServerErrorCode`), passed through unchanged. */
type ApolloRequestCode =
  | 'GRAPHQL_PARSE_FAILED'
  | 'GRAPHQL_VALIDATION_FAILED'
  | 'BAD_REQUEST'
  | 'PERSISTED_QUERY_NOT_FOUND'
  | 'PERSISTED_QUERY_NOT_SUPPORTED'
  /** Trusted documents in `enforce` mode: a first-party free text not in the manifest. */
  | 'PERSISTED_QUERY_NOT_LISTED'
  | 'OPERATION_RESOLUTION_FAILURE';

const APOLLO_REQUEST_CODES = new Set<string>([
  'GRAPHQL_PARSE_FAILED',
  'GRAPHQL_VALIDATION_FAILED',
  'BAD_REQUEST',
  'PERSISTED_QUERY_NOT_FOUND',
  'PERSISTED_QUERY_NOT_SUPPORTED',
  'PERSISTED_QUERY_NOT_LISTED',
  'OPERATION_RESOLUTION_FAILURE',
] satisfies ApolloRequestCode[]);

const CONTRACT_CODES = new Set<string>([
  'UNAUTHENTICATED',
  'FORBIDDEN',
  'NOT_FOUND',
  'BAD_USER_INPUT',
  'CONFLICT',
  'RATE_LIMITED',
  'QUERY_TOO_COMPLEX',
  'RESYNC_REQUIRED',
  'INTERNAL_SERVER_ERROR',
  ...APOLLO_REQUEST_CODES,
]);

/** The one mapping from domain error codes to GraphQL codes (CONTRIBUTING.md, house style 5). */
function gqlCodeOf(code: ErrorCode): GqlErrorCode {
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

const CONTEXT_FAILED = 'Context creation failed: ';

// graphql-js 16's messages for an absent non-null input member, in a literal and in a variable
const MISSING_MEMBER =
  /(?:^Variable "\$\w+" got invalid value .*? at "\w+((?:\.\w+|\[\d+\])*)"; |^Variable "\$\w+" got invalid value .*?; |^)Field "(?:\w+\.)?(\w+)" of required type "[^"]+" was not provided\.$/s;

/**
 * `details: [{field, message: "<field> is required"}]` for a missing input member, as REST reports it
 * (the schema, not class-validator, refuses it here). `field` is the member's path in the input.
 */
function missingMember(message: string): ErrorDetail[] | undefined {
  const m = MISSING_MEMBER.exec(message);
  if (!m) {
    return undefined;
  }
  const at = (m[1] ?? '').replace(/\[(\d+)\]/g, '.$1').replace(/^\./, '');
  const field = at ? `${at}.${m[2]}` : m[2];
  return [{ field, message: `${field} is required` }];
}
const logger = new Logger('GraphQL');

interface Formatted extends GraphQLFormattedError {
  extensions?: {
    code: GqlErrorCode;
    details?: ErrorDetail[];
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
    if (
      typeof code === 'string' &&
      CONTRACT_CODES.has(code) &&
      code !== 'BAD_USER_INPUT' &&
      !APOLLO_REQUEST_CODES.has(code)
    ) {
      const { http: _http, code: _code, ...extra } = (candidate as GraphQLError).extensions;
      return withCode(formatted, code as GqlErrorCode, message, extra);
    }
  }

  // Apollo's and graphql-js's request errors keep Apollo's code: parse, validation, persisted
  // queries, operation resolution, malformed requests (BAD_REQUEST), and BAD_USER_INPUT for
  // variables that do not coerce (the one request error that is about the caller's input values)
  const apolloCode = formatted.extensions?.code;
  if (
    typeof apolloCode === 'string' &&
    (APOLLO_REQUEST_CODES.has(apolloCode) || apolloCode === 'BAD_USER_INPUT')
  ) {
    const details =
      ((original as GraphQLError | undefined)?.originalError instanceof GraphQLError
        ? ((original as GraphQLError).originalError as GraphQLError).extensions.details
        : formatted.extensions?.details) ?? missingMember(message);
    return withCode(
      formatted,
      apolloCode as GqlErrorCode,
      message,
      Array.isArray(details) ? { details } : {},
    );
  }

  // Apollo's own request errors without a code but with a 4xx status (a persisted query whose hash
  // does not match, an unsupported persisted query version): a malformed request, not our fault
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
    return withCode(formatted, 'BAD_REQUEST', message);
  }

  logger.error({ err: original }, 'unexpected GraphQL error');
  return withCode(formatted, 'INTERNAL_SERVER_ERROR', 'Internal server error');
}
