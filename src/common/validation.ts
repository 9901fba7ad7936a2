import { ValidationPipe, type ValidationError } from '@nestjs/common';
import { plainToInstance } from 'class-transformer';
import { validate } from 'class-validator';
import { BadRequest, ValidationFailed, type ErrorDetail } from './errors.js';

const OPTIONS = { whitelist: true, forbidNonWhitelisted: true, forbidUnknownValues: true } as const;

/** class-validator errors -> `[{field, message}]` (nested members as `items.0.sku`). */
export function toDetails(errors: ValidationError[], parent = ''): ErrorDetail[] {
  const details: ErrorDetail[] = [];
  for (const error of errors) {
    const field = parent ? `${parent}.${error.property}` : error.property;
    for (const message of Object.values(error.constraints ?? {})) {
      details.push({
        field,
        message: message.startsWith('property ') ? `${field} is not a known member` : message,
      });
    }
    details.push(...toDetails(error.children ?? [], field));
  }
  return details;
}

/** Validates a plain value against a DTO class; throws 422 `validation_failed` with details. */
export async function validateInput<T extends object>(
  cls: new () => T,
  value: unknown,
): Promise<T> {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw BadRequest('The body must be a JSON object');
  }
  const instance = plainToInstance(cls, value);
  const errors = await validate(instance, OPTIONS);
  if (errors.length > 0) {
    throw ValidationFailed(toDetails(errors));
  }
  return instance;
}

/** The global pipe for REST bodies: unknown members -> 422, any rule -> 422 with details. */
export function validationPipe(): ValidationPipe {
  return new ValidationPipe({
    ...OPTIONS,
    transform: true,
    // query strings are parsed by the list helpers (strict 400), not here
    validateCustomDecorators: false,
    exceptionFactory: (errors) => ValidationFailed(toDetails(errors)),
  });
}
