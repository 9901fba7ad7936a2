/**
 * Domain errors: every rule violation in a service is one of these. The REST filter and the GraphQL
 * formatter each map them with one exhaustive switch over `code` (CONTRIBUTING.md, house style 5).
 */
export const ERROR_CODES = [
  'bad_request',
  'unsupported_version',
  'unauthorized',
  'forbidden',
  'insufficient_scope',
  'not_found',
  'method_not_allowed',
  'not_acceptable',
  'conflict',
  'idempotency_key_in_progress',
  'precondition_failed',
  'payload_too_large',
  'unsupported_media_type',
  'validation_failed',
  'idempotency_key_reused',
  'rate_limited',
  'query_too_complex',
  'internal_error',
  'service_unavailable',
] as const;

export type ErrorCode = (typeof ERROR_CODES)[number];

export interface ErrorDetail {
  field?: string;
  index?: number;
  message: string;
}

export class DomainError extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly details?: ErrorDetail[],
  ) {
    super(message);
    this.name = 'DomainError';
  }
}

export const NotFound = (what = 'Resource') => new DomainError('not_found', `${what} not found`);
export const Forbidden = (message = 'You do not have permission for this action') =>
  new DomainError('forbidden', message);
export const Unauthorized = (message = 'Authentication required') =>
  new DomainError('unauthorized', message);
export const Conflict = (message: string, details?: ErrorDetail[]) =>
  new DomainError('conflict', message, details);
export const BadRequest = (message: string, details?: ErrorDetail[]) =>
  new DomainError('bad_request', message, details);
export const ValidationFailed = (details: ErrorDetail[], message = 'Validation failed') =>
  new DomainError('validation_failed', message, details);
export const PreconditionFailed = (
  message = 'The resource has changed (If-Match does not match)',
) => new DomainError('precondition_failed', message);

/** HTTP status of each code. */
export function statusOf(code: ErrorCode): number {
  switch (code) {
    case 'bad_request':
    case 'unsupported_version':
      return 400;
    case 'unauthorized':
      return 401;
    case 'forbidden':
    case 'insufficient_scope':
      return 403;
    case 'not_found':
      return 404;
    case 'method_not_allowed':
      return 405;
    case 'not_acceptable':
      return 406;
    case 'conflict':
    case 'idempotency_key_in_progress':
      return 409;
    case 'precondition_failed':
      return 412;
    case 'payload_too_large':
      return 413;
    case 'unsupported_media_type':
      return 415;
    case 'validation_failed':
    case 'idempotency_key_reused':
      return 422;
    case 'rate_limited':
      return 429;
    case 'query_too_complex':
      return 400;
    case 'internal_error':
      return 500;
    case 'service_unavailable':
      return 503;
  }
}

/** The REST code for an HTTP status (used for errors that did not start as DomainErrors). */
export function codeOfStatus(status: number): ErrorCode {
  switch (status) {
    case 400:
      return 'bad_request';
    case 401:
      return 'unauthorized';
    case 403:
      return 'forbidden';
    case 404:
      return 'not_found';
    case 405:
      return 'method_not_allowed';
    case 406:
      return 'not_acceptable';
    case 409:
      return 'conflict';
    case 412:
      return 'precondition_failed';
    case 413:
      return 'payload_too_large';
    case 415:
      return 'unsupported_media_type';
    case 422:
      return 'validation_failed';
    case 429:
      return 'rate_limited';
    case 503:
      return 'service_unavailable';
    default:
      return status >= 500 ? 'internal_error' : 'bad_request';
  }
}

export const WWW_AUTHENTICATE = 'Basic realm="atrium", Bearer';
