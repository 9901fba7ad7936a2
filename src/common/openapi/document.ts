import type {
  OpenAPIObject,
  ParameterObject,
  ReferenceObject,
  ResponseObject,
  SchemaObject,
} from '@nestjs/swagger';
import { errorSchemas } from './errors.js';
import { header, HEADERS, IDEMPOTENCY_HEADER } from './headers.js';

const METHODS = ['get', 'put', 'post', 'delete', 'patch'] as const;

/** `If-None-Match` on every GET under /api/: the ETag of a 200 the client already has (304). */
const IF_NONE_MATCH: ParameterObject = {
  name: 'If-None-Match',
  in: 'header',
  required: false,
  // no `example`: Swagger UI fills "Try it out" fields with it, and would send a made-up ETag
  description:
    'The `ETag` of the representation you have (e.g. `"2c-1yW8Lh5nEkq3vZ0mHkq8aA"`): 304 with no body while it is still current.',
  schema: { type: 'string' },
};

/**
 * What every response of a kind carries, added once to the whole document (the HTTP hooks add it to
 * every response, so no controller says it): `X-Request-Id` everywhere, `RateLimit-*` under /api/
 * (absent only while the limiter's store is unavailable), on GET 200 under /api/ the `ETag` with
 * `If-None-Match` and its 304 answer (src/http/http-hooks.ts), and `Idempotent-Replayed` on the
 * answers an `Idempotency-Key` can replay. Request bodies are closed (`additionalProperties:
 * false`): the validation pipe refuses a member its DTO does not declare (422). Also the error
 * schemas and header components the controllers' decorators refer to
 * (src/common/openapi/decorators.ts).
 */
export function finishOpenApiDocument(document: OpenAPIObject): void {
  document.components ??= {};
  documentDeprecatedQueryKey(document);
  document.components.schemas = { ...document.components.schemas, ...errorSchemas() };
  document.components.headers = { ...document.components.headers, ...HEADERS };
  const closed = new Set<SchemaObject>();
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
        operation.parameters = [...(operation.parameters ?? []), IF_NONE_MATCH];
        operation.responses['304'] = {
          description: 'Not modified: `If-None-Match` matches the current `ETag` (no body).',
          headers: { ETag: header('ETag') },
        };
      }
      const body = operation.requestBody;
      if (body && !('$ref' in body)) {
        for (const media of Object.values(body.content)) {
          if (media.schema) {
            closeObjects(media.schema, document, closed);
          }
        }
      }
      const idempotent = (operation.parameters ?? []).some(
        (p) => !('$ref' in p) && p.in === 'header' && p.name === IDEMPOTENCY_HEADER,
      );
      for (const [status, response] of Object.entries(operation.responses) as [
        string,
        ResponseObject | ReferenceObject,
      ][]) {
        if ('$ref' in response) {
          continue;
        }
        // a replay is the stored first answer: any status below 500 but 429 (docs/idempotency.md)
        const replayable = idempotent && Number(status) < 500 && status !== '429';
        response.headers = {
          ...response.headers,
          ...(replayable ? { 'Idempotent-Replayed': header('Idempotent-Replayed') } : {}),
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

/** The security scheme of `?api_key=`, deprecated in favour of `X-API-Key` (docs/changes.md). */
const QUERY_KEY_SCHEME = 'api_key_query';

/**
 * `?api_key=` is a security scheme, and a security scheme has no `deprecated` member before
 * OpenAPI 3.2: every operation that accepts it also lists it as a query parameter marked
 * `deprecated: true` (one shared component), which generated clients and Swagger UI show.
 */
function documentDeprecatedQueryKey(document: OpenAPIObject): void {
  const parameter: ParameterObject = {
    name: 'api_key',
    in: 'query',
    required: false,
    deprecated: true,
    description:
      'Deprecated: send the key in `X-API-Key` (a credential in a URL ends up in logs and histories). Answers to requests that use it carry `Deprecation`, `Sunset` and `Link: <…>; rel="deprecation"` (docs/changes.md).',
    schema: { type: 'string' },
  };
  document.components!.parameters = { ...document.components!.parameters, ApiKeyQuery: parameter };
  for (const item of Object.values(document.paths)) {
    for (const method of METHODS) {
      const operation = item[method];
      if (operation?.security?.some((s) => QUERY_KEY_SCHEME in s)) {
        operation.parameters = [
          ...(operation.parameters ?? []),
          { $ref: '#/components/parameters/ApiKeyQuery' },
        ];
      }
    }
  }
}

/**
 * Marks every object schema of a request body, followed through `$ref`s, array items and
 * combinations, as `additionalProperties: false` (once each: `closed` remembers them).
 */
function closeObjects(
  node: SchemaObject | ReferenceObject,
  document: OpenAPIObject,
  closed: Set<SchemaObject>,
): void {
  let schema: SchemaObject | ReferenceObject | undefined = node;
  if ('$ref' in schema) {
    const name = schema.$ref.replace('#/components/schemas/', '');
    schema = document.components?.schemas?.[name];
  }
  if (!schema || '$ref' in schema || closed.has(schema)) {
    return;
  }
  closed.add(schema);
  if (schema.properties) {
    schema.additionalProperties ??= false;
    Object.values(schema.properties).forEach((p) => closeObjects(p, document, closed));
  }
  if (schema.items) {
    closeObjects(schema.items, document, closed);
  }
  for (const list of [schema.allOf, schema.oneOf, schema.anyOf]) {
    list?.forEach((s) => closeObjects(s, document, closed));
  }
}
