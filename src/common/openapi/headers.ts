import type { HeaderObject } from '@nestjs/swagger';

/** The response headers of the contract (docs/contract.md), as `components.headers`. */
export const HEADERS = {
  'X-Request-Id': {
    description:
      'The request’s id: the client’s well-formed `X-Request-Id`, else a generated one. Quote it when reporting a problem.',
    schema: { type: 'string', example: '0b6f1c9e-3f7e-4c1e-9b7a-2d5c6f1e8a90' },
  },
  ETag: {
    description:
      'Strong validator of the body; send it back as `If-None-Match` (304) or `If-Match` (412 when stale).',
    schema: { type: 'string', example: '"2c-1yW8Lh5nEkq3vZ0mHkq8aA"' },
  },
  Location: {
    description: 'URL of the created resource.',
    schema: {
      type: 'string',
      format: 'uri',
      example: 'https://atrium.example.com/api/v1/users/usr_01JD5Z6K3M',
    },
  },
  Link: {
    description: 'RFC 8288 links to the `first`, `prev`, `next` and `last` pages (docs/lists.md).',
    schema: {
      type: 'string',
      example: '<https://atrium.example.com/api/v1/users?page=2&limit=20>; rel="next"',
    },
  },
  'RateLimit-Limit': {
    description: 'Requests allowed in the window of the caller’s bucket (docs/rate-limits.md).',
    schema: { type: 'integer', minimum: 0, example: 100 },
  },
  'RateLimit-Remaining': {
    description: 'Requests left in the current window.',
    schema: { type: 'integer', minimum: 0, example: 99 },
  },
  'RateLimit-Reset': {
    description: 'Seconds until the window resets.',
    schema: { type: 'integer', minimum: 1, example: 60 },
  },
  'Retry-After': {
    description: 'Seconds to wait before retrying.',
    schema: { type: 'integer', minimum: 1, example: 30 },
  },
  'WWW-Authenticate': {
    description: 'The schemes the API accepts.',
    schema: { type: 'string', example: 'Basic realm="atrium", Bearer' },
  },
} satisfies Record<string, HeaderObject>;

/** A reference to one of `HEADERS`. */
export const header = (name: keyof typeof HEADERS) => ({
  $ref: `#/components/headers/${name}`,
});
