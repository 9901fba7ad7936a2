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

function envelope(codes: readonly ErrorCode[], example: ErrorCode, message: string): SchemaObject {
  return {
    type: 'object',
    required: ['error'],
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
        },
      },
    },
  };
}

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
  return envelope(codes, codes[0] ?? 'bad_request', STATUS_CODES[status] ?? 'Error');
}
