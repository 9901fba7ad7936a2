import { ValidationPipe, type ArgumentMetadata, type ValidationError } from '@nestjs/common';
import { plainToInstance } from 'class-transformer';
import { registerDecorator, validate, type ValidationOptions } from 'class-validator';
import { BadRequest, ValidationFailed, type ErrorDetail } from './errors.js';

const OPTIONS = { whitelist: true, forbidNonWhitelisted: true, forbidUnknownValues: true } as const;

/** At most this many text problems are reported for one input. */
const MAX_TEXT_DETAILS = 20;

// Unpaired UTF-16 surrogates are not Unicode text: they cannot be encoded as UTF-8 (PostgreSQL would
// receive U+FFFD instead, SQLite would store invalid text).
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/**
 * Why a string cannot be stored as text, or undefined when it can. Every text field of every
 * resource is checked with this before any other rule (docs/data-integrity.md): NUL (U+0000) is
 * refused by PostgreSQL's text types, and an unpaired surrogate is not a character.
 */
function textProblem(value: string): string | undefined {
  if (value.includes('\u0000')) {
    return 'must not contain NUL (U+0000) characters';
  }
  if (LONE_SURROGATE.test(value)) {
    return 'must be valid Unicode text (it contains an unpaired UTF-16 surrogate)';
  }
  return undefined;
}

/** True when `value` is a string that can be stored as text. */
export function isStorableText(value: unknown): value is string {
  return typeof value === 'string' && textProblem(value) === undefined;
}

/**
 * Every string in a plain input value (objects and arrays, walked without recursion) that cannot be
 * stored as text, as `[{field, message}]` with the member's path (`items.0.sku`). `root` names a
 * top-level string (a GraphQL scalar argument).
 */
function textProblems(value: unknown, root = ''): ErrorDetail[] {
  const details: ErrorDetail[] = [];
  const stack: [unknown, string][] = [[value, root]];
  while (stack.length > 0 && details.length < MAX_TEXT_DETAILS) {
    const [current, path] = stack.pop()!;
    if (typeof current === 'string') {
      const problem = textProblem(current);
      if (problem) {
        const field = path || 'value';
        details.push({ field, message: `${field} ${problem}` });
      }
    } else if (current !== null && typeof current === 'object') {
      const entries = Object.entries(current as Record<string, unknown>);
      for (let i = entries.length - 1; i >= 0; i--) {
        const [key, member] = entries[i];
        stack.push([member, path ? `${path}.${key}` : key]);
      }
    }
  }
  return details;
}

export function assertStorableText(value: unknown, root = ''): void {
  const problems = textProblems(value, root);
  if (problems.length > 0) {
    throw ValidationFailed(problems);
  }
}

/**
 * class-validator errors -> `[{field, message}]` (nested members as `items.0.sku`). A member that is
 * absent but has rules (optional members skip theirs with ValidateIf) is required: it gets the one
 * message `<field> is required`, not the rules an absent value happens to break ("must be shorter
 * than..."). Every input of every resource reports missing members this way, REST and GraphQL alike.
 */
function toDetails(errors: ValidationError[], parent = ''): ErrorDetail[] {
  const details: ErrorDetail[] = [];
  for (const error of errors) {
    const field = parent ? `${parent}.${error.property}` : error.property;
    const constraints = Object.values(error.constraints ?? {});
    const unknownMember = constraints.some((m) => m.startsWith('property '));
    if (error.value === undefined && constraints.length > 0 && !unknownMember) {
      details.push({ field, message: `${field} is required` });
      continue;
    }
    for (const message of constraints) {
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
  assertStorableText(value);
  const instance = plainToInstance(cls, value);
  const errors = await validate(instance, OPTIONS);
  if (errors.length > 0) {
    throw ValidationFailed(toDetails(errors));
  }
  return instance;
}

const PER_ITEM = new WeakSet<object>();

/**
 * Marks an input class whose members are validated one by one later by its service (e.g. a batch,
 * whose errors carry the failing item's index): the global pipe leaves its text to that validation.
 */
export function ValidatedPerItem(): ClassDecorator {
  return (target) => {
    PER_ITEM.add(target);
  };
}

const PLAIN_TYPES: unknown[] = [String, Boolean, Number, Array, Object, Buffer, Date];

/** A DTO class (not a primitive wrapper or a plain Object/Array parameter type). */
function isInputClass(metatype: unknown): boolean {
  return typeof metatype === 'function' && !PLAIN_TYPES.includes(metatype);
}

function isValidatedPerItem(metatype: unknown): boolean {
  return typeof metatype === 'function' && PER_ITEM.has(metatype);
}

/**
 * The global pipe: REST bodies and GraphQL arguments are checked for unstorable text first (every
 * string, whatever its DTO says), then validated against their DTO.
 */
class InputValidationPipe extends ValidationPipe {
  override async transform(value: unknown, metadata: ArgumentMetadata): Promise<unknown> {
    // REST bodies and GraphQL arguments both arrive as 'body' (a GraphQL argument with its name in
    // `data`): a scalar argument is reported by its name, an object by its members' paths
    if (
      metadata.type === 'body' &&
      metadata.data === undefined &&
      isInputClass(metadata.metatype)
    ) {
      // `null`, an array or a scalar is valid JSON but no document for an input object (RFC 7396: a
      // merge patch that is not an object would replace the whole resource) -> 400, as malformed JSON
      if (value === null || typeof value !== 'object' || Array.isArray(value)) {
        throw BadRequest('The request body must be a JSON object', [
          { field: 'body', message: 'the body must be a JSON object' },
        ]);
      }
    }
    if (metadata.type === 'body' && !isValidatedPerItem(metadata.metatype)) {
      assertStorableText(value, typeof value === 'string' ? (metadata.data ?? '') : '');
    }
    return super.transform(value, metadata);
  }
}

/** The global pipe for REST bodies: unknown members -> 422, any rule -> 422 with details. */
export function validationPipe(): ValidationPipe {
  return new InputValidationPipe({
    ...OPTIONS,
    transform: true,
    // query strings are parsed by the list helpers (strict 400), not here
    validateCustomDecorators: false,
    exceptionFactory: (errors) => ValidationFailed(toDetails(errors)),
  });
}

const RFC3339 =
  /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(\.\d{1,9})?([Zz]|[+-](\d{2}):(\d{2}))$/;

/**
 * An RFC 3339 date-time with an offset (`2030-01-01T00:00:00Z`, `…+02:00`) naming a real instant
 * between years 0001 and 9999. ISO 8601 forms that are not RFC 3339 (`2030-W01-1`, `-9999-01-01`,
 * dates without a time) and impossible dates (`2030-02-30`) are refused.
 */
function isRfc3339(value: unknown): value is string {
  if (typeof value !== 'string') {
    return false;
  }
  const m = RFC3339.exec(value);
  if (!m) {
    return false;
  }
  const [year, month, day, hour, minute, second] = m.slice(1, 7).map(Number) as [
    number,
    number,
    number,
    number,
    number,
    number,
  ];
  const daysInMonth = new Date(Date.UTC(2000, month, 0)).getUTCDate(); // month 1-12; leap year 2000
  const leap = (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0;
  if (
    year < 1 ||
    month < 1 ||
    month > 12 ||
    day < 1 ||
    day > (month === 2 && !leap ? 28 : daysInMonth) ||
    hour > 23 ||
    minute > 59 ||
    second > 59 ||
    (m[9] !== undefined && (Number(m[9]) > 23 || Number(m[10]) > 59))
  ) {
    return false;
  }
  return Number.isFinite(Date.parse(value));
}

/** class-validator decorator for {@link isRfc3339}. */
export function IsRfc3339(options?: ValidationOptions): PropertyDecorator {
  return (target: object, propertyName: string | symbol) => {
    registerDecorator({
      name: 'isRfc3339',
      target: target.constructor,
      propertyName: String(propertyName),
      options: {
        message: `${String(propertyName)} must be an RFC 3339 timestamp such as 2030-01-01T00:00:00Z`,
        ...options,
      },
      validator: { validate: (value: unknown) => isRfc3339(value) },
    });
  };
}
