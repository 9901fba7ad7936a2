import { applyDecorators, UseInterceptors } from '@nestjs/common';
import { ApiHeader } from '@nestjs/swagger';
import { IDEMPOTENCY_HEADER, IdempotencyInterceptor } from './idempotency.interceptor.js';

/** A creating POST that honours `Idempotency-Key` (docs/idempotency.md), documented in OpenAPI. */
export function Idempotent(): MethodDecorator {
  return applyDecorators(
    UseInterceptors(IdempotencyInterceptor),
    ApiHeader({
      name: IDEMPOTENCY_HEADER,
      required: false,
      description:
        'Makes a retry safe: the same key and body within 24 h return the first response ' +
        '(with `Idempotent-Replayed: true`); another body is 422 `idempotency_key_reused`; ' +
        'while the first request runs, 409 `idempotency_key_in_progress`. 1-255 visible ASCII characters.',
      schema: { type: 'string', minLength: 1, maxLength: 255 },
    }),
  );
}
