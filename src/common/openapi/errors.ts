import { STATUS_CODES } from 'node:http';
import type { SchemaObject } from '@nestjs/swagger';
import { ERROR_CODES, statusOf, type ErrorCode } from '../errors.js';

/**
 * The error envelope in the OpenAPI document, generated from the codes of `src/common/errors.ts`
 * (`ERROR_CODES` and `statusOf`): one schema per status whose `code` enumerates exactly the codes
 * that status can carry, so a client can switch on it and a drifted code fails the e2e validation.
 */

/** A status the router answers before any route (a path parameter over its limit, docs/limits.md). */
const HTTP_LAYER: Record<number, ErrorCode[]> = { 414: ['bad_request'] };

/** Codes only GraphQL answers (its cost limit): never in a REST envelope. */
const GRAPHQL_ONLY: readonly ErrorCode[] = ['query_too_complex'];

/** REST error codes by HTTP status. */
function codesOfStatus(status: number): ErrorCode[] {
  return (
    HTTP_LAYER[status] ??
    ERROR_CODES.filter((code) => statusOf(code) === status && !GRAPHQL_ONLY.includes(code))
  );
}

/** Component name of the error schema of one status (`NotFoundError`, `TooManyRequestsError`). */
export function errorSchemaName(status: number): string {
  const words = (STATUS_CODES[status] ?? `Status ${status}`).replace(/[^A-Za-z0-9 ]/g, '');
  return `${words
    .split(' ')
    .map((w) => w.charAt(0).toUpperCase() + w.slice(1).toLowerCase())
    .join('')}Error`;
}

const DETAIL: SchemaObject = {
  type: 'object',
  description:
    'One problem of the request: the member (or list index) it concerns and what is wrong.',
  required: ['message'],
  properties: {
    field: { type: 'string', example: 'email' },
    index: { type: 'integer', minimum: 0, description: 'Position in a batch or list body.' },
    message: { type: 'string', example: 'email must be a valid email address' },
  },
};

function envelope(
  codes: readonly ErrorCode[],
  example: ErrorCode,
  message: string,
  whole: ErrorExample,
): SchemaObject {
  return {
    type: 'object',
    required: ['error'],
    // the whole envelope's example: Swagger UI shows it instead of one built from the members'
    // examples (which gave every status the email detail of a 422)
    example: { error: whole },
    properties: {
      error: {
        type: 'object',
        required: ['code', 'message'],
        properties: {
          code: { type: 'string', enum: [...codes], example },
          message: { type: 'string', example: message },
          details: { type: 'array', items: { $ref: '#/components/schemas/ErrorDetail' } },
          request_id: {
            type: 'string',
            description: 'On 5xx answers: the `X-Request-Id` to quote when reporting it.',
          },
          trace_id: {
            type: 'string',
            pattern: '^[0-9a-f]{32}$',
            description:
              'When tracing is on (an OTLP endpoint is configured, docs/operations.md): the id of the trace of this request (also in the `traceparent` answer header).',
          },
        },
      },
    },
  };
}

interface ErrorExample {
  code: ErrorCode;
  message: string;
  details?: { field?: string; index?: number; message: string }[];
  request_id?: string;
}

/**
 * One example per status, as the server words it: only a 400 or 422 carries `details` (the
 * members it concerns), only a 5xx `request_id`.
 */
const ERROR_EXAMPLES: Record<number, ErrorExample> = {
  400: {
    code: 'bad_request',
    message: 'Invalid query parameters',
    details: [{ field: 'limit', message: 'limit must be an integer from 1 to 100' }],
  },
  401: { code: 'unauthorized', message: 'Authentication required' },
  403: { code: 'forbidden', message: 'You do not have permission for this action' },
  404: { code: 'not_found', message: 'User not found' },
  406: { code: 'not_acceptable', message: 'This endpoint only produces application/json' },
  409: { code: 'conflict', message: 'A user with this email already exists' },
  412: {
    code: 'precondition_failed',
    message: 'The resource has changed (If-Match does not match)',
  },
  413: { code: 'payload_too_large', message: 'The request body exceeds 1 MiB' },
  414: { code: 'bad_request', message: 'A path segment exceeds 100 characters' },
  415: {
    code: 'unsupported_media_type',
    message: 'Unsupported Content-Type: send application/json',
  },
  422: {
    code: 'validation_failed',
    message: 'Validation failed',
    details: [{ field: 'email', message: 'email must be a valid email address' }],
  },
  429: { code: 'rate_limited', message: 'Too many requests; retry in 12 s' },
  500: {
    code: 'internal_error',
    message: 'Internal server error; quote the request id when reporting it',
    request_id: '5f0c2a9e-3b7d-4e21-9a4c-8d1e6f2b7c30',
  },
  503: {
    code: 'service_unavailable',
    message: 'The database is temporarily unavailable; retry shortly',
    request_id: '5f0c2a9e-3b7d-4e21-9a4c-8d1e6f2b7c30',
  },
};

/** Every status an `/api/v1` route may answer with an error envelope. */
const ERROR_STATUSES = [400, 401, 403, 404, 406, 409, 412, 413, 414, 415, 422, 429, 500, 503];

/** `components.schemas` of the envelope: `ErrorDetail` and one envelope per status. */
export function errorSchemas(): Record<string, SchemaObject> {
  const schemas: Record<string, SchemaObject> = { ErrorDetail: DETAIL };
  for (const status of ERROR_STATUSES) {
    schemas[errorSchemaName(status)] = errorEnvelopeSchema(status);
  }
  return schemas;
}

/** The envelope of one status (also for answers no operation owns: 404 unknown path, 405). */
export function errorEnvelopeSchema(status: number): SchemaObject {
  const codes = codesOfStatus(status);
  const code = codes[0] ?? 'bad_request';
  const whole = ERROR_EXAMPLES[status] ?? { code, message: STATUS_CODES[status] ?? 'Error' };
  return envelope(codes, whole.code, whole.message, whole);
}
