import type { HeaderObject } from '@nestjs/swagger';

/** The request header that makes a write replayable (docs/idempotency.md). */
export const IDEMPOTENCY_HEADER = 'Idempotency-Key';

/** A header whose value is a string (`format`: the JSON Schema format, when it has one). */
function stringHeader(description: string, example: string, format?: string): HeaderObject {
  return {
    description,
    schema:
      format === undefined ? { type: 'string', example } : { type: 'string', format, example },
  };
}

/** A header whose value is a whole number, never below `minimum` (a count, or seconds). */
function integerHeader(description: string, minimum: number, example: number): HeaderObject {
  return { description, schema: { type: 'integer', minimum, example } };
}

/** The response headers of the contract (docs/contract.md), as `components.headers`. */
export const HEADERS = {
  'X-Request-Id': stringHeader(
    'The request’s id: the client’s well-formed `X-Request-Id`, else a generated one. Quote it when reporting a problem.',
    '0b6f1c9e-3f7e-4c1e-9b7a-2d5c6f1e8a90',
  ),
  ETag: stringHeader(
    'Strong validator of the body; send it back as `If-None-Match` (304) or `If-Match` (412 when stale).',
    '"2c-1yW8Lh5nEkq3vZ0mHkq8aA"',
  ),
  Location: stringHeader(
    'URL of the created resource.',
    'https://atrium.example.com/api/v1/users/usr_01JD5Z6K3M',
    'uri',
  ),
  Link: stringHeader(
    'RFC 8288 links to the `first`, `prev`, `next` and `last` pages (docs/lists.md).',
    '<https://atrium.example.com/api/v1/users?page=2&limit=20>; rel="next"',
  ),
  'RateLimit-Limit': integerHeader(
    'Requests allowed in the window of the caller’s bucket (docs/rate-limits.md).',
    0,
    100,
  ),
  'RateLimit-Remaining': integerHeader('Requests left in the current window.', 0, 99),
  'RateLimit-Reset': integerHeader('Seconds until the window resets.', 1, 60),
  'RateLimit-Cost-Remaining': integerHeader(
    'Points left in the caller’s cost budget (GraphQL and list pages) after this page.',
    0,
    9479,
  ),
  'Retry-After': integerHeader('Seconds to wait before retrying.', 1, 30),
  'WWW-Authenticate': stringHeader('The schemes the API accepts.', 'Basic realm="atrium", Bearer'),
  'Idempotent-Replayed': {
    description:
      '`true` when this is the stored response of an earlier request with the same `Idempotency-Key` (docs/idempotency.md).',
    schema: { type: 'string', enum: ['true'], example: 'true' },
  },
} satisfies Record<string, HeaderObject>;

/** A reference to one of `HEADERS`. */
export const header = (name: keyof typeof HEADERS) => ({
  $ref: `#/components/headers/${name}`,
});
