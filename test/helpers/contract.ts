import { expect } from 'vitest';

/**
 * The documented error answers, in one place for the tests that check "any documented error" rather
 * than one particular answer (the fuzz and abuse suites): docs/contract.md section 6, docs/oauth.md
 * (`insufficient_scope`), docs/graphql.md "Errors".
 */
const REST_ERROR_CODES: Readonly<Record<number, readonly string[]>> = {
  400: ['bad_request', 'unsupported_version', 'query_too_complex'],
  401: ['unauthorized'],
  403: ['forbidden', 'insufficient_scope'],
  404: ['not_found'],
  405: ['method_not_allowed'],
  406: ['not_acceptable'],
  408: ['bad_request'],
  409: ['conflict'],
  412: ['precondition_failed'],
  413: ['payload_too_large'],
  414: ['bad_request'],
  415: ['unsupported_media_type'],
  422: ['validation_failed'],
  429: ['rate_limited'],
  431: ['bad_request'],
  500: ['internal_error'],
  503: ['service_unavailable'],
};

/**
 * `extensions.code` of a GraphQL error a client may be answered with, the unexpected
 * `INTERNAL_SERVER_ERROR` left out. A request error (parse, validation, variable coercion, a malformed
 * request) carries `BAD_USER_INPUT` or Apollo's own code for it: both are accepted here, so these
 * checks hold whichever of the two the server documents.
 */
export const GRAPHQL_ERROR_CODES: readonly string[] = [
  'UNAUTHENTICATED',
  'FORBIDDEN',
  'NOT_FOUND',
  'BAD_USER_INPUT',
  'CONFLICT',
  'RATE_LIMITED',
  'QUERY_TOO_COMPLEX',
  // Apollo Server's request-error codes
  'GRAPHQL_PARSE_FAILED',
  'GRAPHQL_VALIDATION_FAILED',
  'BAD_REQUEST',
  'PERSISTED_QUERY_NOT_FOUND',
  'PERSISTED_QUERY_NOT_SUPPORTED',
  'OPERATION_RESOLUTION_FAILURE',
];

/** Why `body` is not the REST error envelope for `status` (undefined when it is). */
export function restEnvelopeProblem(status: number, body: unknown): string | undefined {
  const allowed = REST_ERROR_CODES[status];
  if (!allowed) {
    return `status ${status} is not a documented error status`;
  }
  if (typeof body !== 'object' || body === null || !('error' in body)) {
    return 'no {"error": …} body';
  }
  const keys = Object.keys(body);
  if (keys.length !== 1) {
    return `members beside "error": ${keys.join(', ')}`;
  }
  const error = body.error as Record<string, unknown>;
  if (typeof error !== 'object' || error === null) {
    return '"error" is not an object';
  }
  if (typeof error.code !== 'string' || !allowed.includes(error.code)) {
    return `code ${JSON.stringify(error.code)} is not one of ${allowed.join(', ')} for ${status}`;
  }
  if (typeof error.message !== 'string' || error.message === '') {
    return 'no message';
  }
  if (error.details !== undefined) {
    if (!Array.isArray(error.details)) {
      return '"details" is not a list';
    }
    for (const d of error.details as Record<string, unknown>[]) {
      if (typeof d !== 'object' || d === null || typeof d.message !== 'string') {
        return `a detail without a message: ${JSON.stringify(d)}`;
      }
      if (d.field !== undefined && typeof d.field !== 'string') {
        return `a detail's field is not a string: ${JSON.stringify(d)}`;
      }
      if (d.index !== undefined && !Number.isInteger(d.index)) {
        return `a detail's index is not an integer: ${JSON.stringify(d)}`;
      }
    }
  }
  const extra = Object.keys(error).filter(
    (k) => !['code', 'message', 'details', 'request_id'].includes(k),
  );
  if (extra.length > 0) {
    return `unknown members in "error": ${extra.join(', ')}`;
  }
  return undefined;
}

/** Why `body` is not a list of documented GraphQL errors (undefined when it is). */
export function graphqlErrorsProblem(body: unknown): string | undefined {
  if (typeof body !== 'object' || body === null) {
    return 'the body is not a JSON object';
  }
  const errors = (body as { errors?: unknown }).errors;
  if (errors === undefined) {
    return undefined;
  }
  if (!Array.isArray(errors) || errors.length === 0) {
    return '"errors" is not a non-empty list';
  }
  for (const e of errors as Record<string, any>[]) {
    if (typeof e?.message !== 'string') {
      return `an error without a message: ${JSON.stringify(e)}`;
    }
    const code = e.extensions?.code;
    if (!GRAPHQL_ERROR_CODES.includes(code)) {
      return `extensions.code ${JSON.stringify(code)} is not documented: ${JSON.stringify(e)}`;
    }
    if (typeof e.extensions?.stacktrace !== 'undefined') {
      return 'a stack trace left the server';
    }
  }
  return undefined;
}

/** Asserts that every GraphQL error of the body has a documented `extensions.code`. */
export function expectGraphqlErrors(body: unknown): void {
  expect(graphqlErrorsProblem(body), JSON.stringify(body)).toBeUndefined();
}
