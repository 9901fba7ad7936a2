import { applyDecorators, UseInterceptors } from '@nestjs/common';
import { ApiHeader, DECORATORS } from '@nestjs/swagger';
import { errorResponse } from '../common/openapi/decorators.js';
import { header } from '../common/openapi/headers.js';
import { IDEMPOTENCY_HEADER, IdempotencyInterceptor } from './idempotency.interceptor.js';

const IN_PROGRESS =
  'The same `Idempotency-Key` is still running (`idempotency_key_in_progress`); retry after `Retry-After` seconds.';

/**
 * The 409 every idempotent route can answer. A route with a 409 of its own (a duplicate email, a
 * room name) keeps its description, extended with this one.
 */
const documentInProgress: MethodDecorator = (target, key, descriptor) => {
  const documented = (Reflect.getMetadata(DECORATORS.API_RESPONSE, descriptor.value as object) ??
    {}) as Record<string, { description?: string }>;
  const own = documented['409']?.description;
  return errorResponse(409, own ? `${own} Or: ${IN_PROGRESS}` : IN_PROGRESS, {
    'Retry-After': header('Retry-After'),
  })(target, key, descriptor);
};

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
    documentInProgress,
  );
}
