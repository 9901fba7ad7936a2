import { applyDecorators, UseInterceptors } from '@nestjs/common';
import { ApiHeader } from '@nestjs/swagger';
import { ApiConflict } from '../common/openapi/decorators.js';
import { header } from '../common/openapi/headers.js';
import { IDEMPOTENCY_HEADER } from '../common/openapi/headers.js';
import {
  IdempotencyInterceptor,
  idempotentOptions,
  type IdempotentOptions,
} from './idempotency.interceptor.js';

/** A creating POST that honours `Idempotency-Key` (docs/idempotency.md), documented in OpenAPI. */
export function Idempotent(options: IdempotentOptions = {}): MethodDecorator {
  return applyDecorators(
    UseInterceptors(IdempotencyInterceptor),
    idempotentOptions(options),
    ApiHeader({
      name: IDEMPOTENCY_HEADER,
      required: false,
      description:
        'Makes a retry safe: the same key and body within 24 h return the first response ' +
        '(with `Idempotent-Replayed: true`); another body is 422 `idempotency_key_reused`; ' +
        'while the first request runs, 409 `idempotency_key_in_progress`. 1-255 visible ASCII characters.',
      schema: { type: 'string', minLength: 1, maxLength: 255 },
    }),
    // the 409 every idempotent route can answer; a route with a 409 of its own (a duplicate email, a
    // room name) keeps its description, extended with this one, whatever the decorators' order
    ApiConflict({
      kind: 'idempotency-key',
      description:
        'The same `Idempotency-Key` is still running (`idempotency_key_in_progress`); retry after `Retry-After` seconds.',
      headers: { 'Retry-After': header('Retry-After') },
    }),
  );
}
