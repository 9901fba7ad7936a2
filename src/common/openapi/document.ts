import type { OpenAPIObject, ReferenceObject, ResponseObject } from '@nestjs/swagger';
import { errorSchemas } from './errors.js';
import { header, HEADERS } from './headers.js';

const METHODS = ['get', 'put', 'post', 'delete', 'patch'] as const;

/**
 * What every response of a kind carries, added once to the whole document (the HTTP hooks add it to
 * every response, so no controller says it): `X-Request-Id` everywhere, `RateLimit-*` under /api/
 * (absent only while the limiter's store is unavailable), and on GET 200 under /api/ the `ETag`
 * with its 304 answer (src/common/http-hooks.ts). Also the error schemas and header components
 * the controllers' decorators refer to (src/common/openapi/decorators.ts).
 */
export function finishOpenApiDocument(document: OpenAPIObject): void {
  document.components ??= {};
  document.components.schemas = { ...document.components.schemas, ...errorSchemas() };
  document.components.headers = { ...document.components.headers, ...HEADERS };
  for (const [path, item] of Object.entries(document.paths)) {
    const api = path.startsWith('/api/');
    for (const method of METHODS) {
      const operation = item[method];
      if (!operation) {
        continue;
      }
      if (api && method === 'get' && operation.responses['200']) {
        const ok = operation.responses['200'] as ResponseObject;
        ok.headers = { ETag: header('ETag'), ...ok.headers };
        operation.responses['304'] = {
          description: 'Not modified: `If-None-Match` matches the current `ETag` (no body).',
          headers: { ETag: header('ETag') },
        };
      }
      for (const response of Object.values(operation.responses) as (
        | ResponseObject
        | ReferenceObject
      )[]) {
        if ('$ref' in response) {
          continue;
        }
        response.headers = {
          ...response.headers,
          'X-Request-Id': header('X-Request-Id'),
          ...(api
            ? {
                'RateLimit-Limit': header('RateLimit-Limit'),
                'RateLimit-Remaining': header('RateLimit-Remaining'),
                'RateLimit-Reset': header('RateLimit-Reset'),
              }
            : {}),
        };
      }
    }
  }
}
