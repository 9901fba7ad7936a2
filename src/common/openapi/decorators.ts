import { applyDecorators, SetMetadata, type Type } from '@nestjs/common';
import {
  ApiExtraModels,
  ApiHeader,
  ApiOperation,
  ApiQuery,
  ApiResponse,
  DECORATORS,
  getSchemaPath,
} from '@nestjs/swagger';
import { DEFAULT_LIMIT, MAX_LIMIT, MAX_PAGE, PageMeta, type ListSpec } from '../list-query.js';
import { errorSchemaName } from './errors.js';
import { header } from './headers.js';

/**
 * The OpenAPI decorators of the REST controllers, one per recurring pattern, so a handler reads
 * `@ApiSingle(UserBody, { status: 201, location: true })` + `@ApiStandardErrors('authenticated-write')`
 * instead of a stack of `@ApiResponse`. Headers every response carries (`X-Request-Id`,
 * `RateLimit-*`, `ETag` and 304 on GET) are added to the whole document by `finishOpenApiDocument`.
 */

/** `summary` (one line) and, where behaviour is not obvious, `description`. */
export const ApiDoc = (summary: string, description?: string) =>
  ApiOperation(description === undefined ? { summary } : { summary, description });

const dataOf = (schema: object) => ({
  type: 'object' as const,
  required: ['data'],
  properties: { data: schema },
});

interface SuccessOptions {
  /** 200 (default) or 201. */
  status?: 200 | 201;
  description?: string;
  /** 201 with `Location`: the URL of the new resource. */
  location?: boolean;
}

/** A single resource as `{data}`. */
export const ApiSingle = (model: Type<unknown>, options: SuccessOptions = {}) => {
  const status = options.status ?? 200;
  return applyDecorators(
    ApiExtraModels(model),
    ApiResponse({
      status,
      description: options.description ?? (status === 201 ? 'Created' : 'The resource'),
      schema: dataOf({ $ref: getSchemaPath(model) }),
      ...(options.location ? { headers: { Location: header('Location') } } : {}),
    }),
  );
};

/** Several resources as `{data: [...]}` (not paged). */
export const ApiList = (model: Type<unknown>, description = 'The list') =>
  applyDecorators(
    ApiExtraModels(model),
    ApiResponse({
      status: 200,
      description,
      schema: dataOf({ type: 'array', items: { $ref: getSchemaPath(model) } }),
    }),
  );

/** A bare object (not wrapped in `{data}`), e.g. the token responses shaped by RFC 6749. */
export const ApiBare = (model: Type<unknown>, description: string) =>
  applyDecorators(
    ApiExtraModels(model),
    ApiResponse({ status: 200, description, schema: { $ref: getSchemaPath(model) } }),
  );

/** 204: done, nothing to send. */
export const ApiNoContent = (description: string) => ApiResponse({ status: 204, description });

/**
 * The list's own spec (sort members, filters, other parameters, heavy members): what
 * `parseListQuery` and the service enforce is what is documented, and what a page costs.
 */
type PageOptions = Pick<ListSpec, 'sortFields' | 'filters' | 'parameters' | 'memberCosts'>;

/** Route metadata of a paged list: the cost of one row (src/rate-limit/list-cost.ts). */
export const LIST_ROW_COST = 'atrium:list-row-cost';

/** Route metadata: a request that costs a fixed number of points (the exports). */
export const FIXED_REQUEST_COST = 'atrium:fixed-request-cost';

/**
 * What one row of `model` costs from the caller's cost budget, as the same selection costs in
 * GraphQL: 1 for the row (an object field) plus 1 per member of its REST schema, `memberCosts` for
 * the large text members.
 */
function rowCostOf(model: Type<unknown>, memberCosts: Record<string, number> = {}): number {
  const members =
    (Reflect.getMetadata(DECORATORS.API_MODEL_PROPERTIES_ARRAY, model.prototype as object) as
      | string[]
      | undefined) ?? [];
  return members.reduce((sum, m) => sum + (memberCosts[m.replace(/^:/, '')] ?? 1), 1);
}

/** `sort`: one or more of `fields`, comma-separated, each optionally prefixed by `-`. */
function sortPattern(fields: readonly string[]): string {
  const field = `-?(${fields.map((f) => f.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('|')})`;
  return `^${field}(,${field})*$`;
}

/**
 * A page of a list as `{data: [...], meta}` with `Link` (docs/lists.md), its query parameters, and
 * its cost (one row's, for the list cost budget, which adds a cause of 429).
 */
export const ApiPage = (model: Type<unknown>, options: PageOptions) =>
  applyDecorators(
    SetMetadata(LIST_ROW_COST, rowCostOf(model, options.memberCosts)),
    ApiExtraModels(model, PageMeta),
    ApiQuery({
      name: 'page',
      required: false,
      schema: { type: 'integer', minimum: 1, maximum: MAX_PAGE, default: 1 },
      description:
        'Page number; `page * limit` may be at most 10000 (deeper: follow `Link: rel="next"`).',
    }),
    ApiQuery({
      name: 'limit',
      required: false,
      schema: { type: 'integer', minimum: 1, maximum: MAX_LIMIT, default: DEFAULT_LIMIT },
    }),
    ApiQuery({
      name: 'sort',
      required: false,
      // no `example` on an optional parameter: Swagger UI fills "Try it out" with it and sends it
      schema: { type: 'string', pattern: sortPattern(options.sortFields) },
      description: `Comma-separated ${options.sortFields.join(', ')}, each at most once; \`-\` for descending (e.g. \`-${options.sortFields[0] ?? 'created_at'}\`).`,
    }),
    ApiQuery({
      name: 'cursor',
      required: false,
      schema: { type: 'string', pattern: '^[A-Za-z0-9_-]{1,400}$' },
      description: 'Keyset position, as found in the `Link: rel="next"` URL.',
    }),
    ...Object.entries(options.filters ?? {}).map(([name, values]) =>
      ApiQuery({ name, required: false, schema: { type: 'string', enum: [...values] } }),
    ),
    ...Object.entries(options.parameters ?? {}).map(([name, { description, schema }]) =>
      ApiQuery({ name, required: false, description, schema }),
    ),
    // joined to the 429 of ApiStandardErrors (ApiResponse merges the descriptions of one status)
    errorResponse(
      429,
      'Or: the page would cost more than is left of the caller’s cost budget (docs/rate-limits.md "List cost").',
      {
        'Retry-After': header('Retry-After'),
        'RateLimit-Cost-Remaining': header('RateLimit-Cost-Remaining'),
      },
    ),
    ApiResponse({
      status: 200,
      description: 'One page; `Link` has the first, prev, next and last pages.',
      schema: {
        type: 'object',
        required: ['data', 'meta'],
        properties: {
          data: { type: 'array', items: { $ref: getSchemaPath(model) } },
          meta: { $ref: getSchemaPath(PageMeta) },
        },
      },
      headers: {
        Link: header('Link'),
        'RateLimit-Cost-Remaining': header('RateLimit-Cost-Remaining'),
      },
    }),
  );

const errorResponse = (status: number, description: string, headers?: Record<string, object>) =>
  ApiResponse({
    status,
    description,
    schema: { $ref: `#/components/schemas/${errorSchemaName(status)}` },
    ...(headers ? { headers } : {}),
  });

/**
 * The causes of a 409, in the order its description gives them: the route's own conflict
 * (`ApiStandardErrors`' `conflict`: a duplicate email, a room name), then `@Idempotent()`'s key still
 * running.
 */
const CONFLICT_CAUSES = ['route', 'idempotency-key'] as const;

export interface ConflictCause {
  kind: (typeof CONFLICT_CAUSES)[number];
  description: string;
  /** Headers the 409 carries for this cause (`Retry-After`). */
  headers?: Record<string, object>;
}

const CONFLICT_CAUSES_KEY = Symbol('atrium:openapi:conflict-causes');

/**
 * One cause of the route's 409. Each decorator that knows one adds it; the documented 409 is rebuilt
 * from all the causes added so far, in the order of `CONFLICT_CAUSES`, so it reads the same whichever
 * decorator runs first.
 */
export const ApiConflict = (cause: ConflictCause) =>
  ((target: object, key?: string | symbol, descriptor?: PropertyDescriptor) => {
    const holder = (descriptor ? descriptor.value : target) as object;
    const causes = [
      ...((Reflect.getMetadata(CONFLICT_CAUSES_KEY, holder) as ConflictCause[] | undefined) ?? []),
      cause,
    ].sort((a, b) => CONFLICT_CAUSES.indexOf(a.kind) - CONFLICT_CAUSES.indexOf(b.kind));
    Reflect.defineMetadata(CONFLICT_CAUSES_KEY, causes, holder);
    // ApiResponse would join the new description to the one documented before: replace it instead
    // (in place, so the responses keep their order)
    const responses = Reflect.getMetadata(DECORATORS.API_RESPONSE, holder) as
      | Record<string, unknown>
      | undefined;
    if (responses?.['409']) {
      Reflect.defineMetadata(DECORATORS.API_RESPONSE, { ...responses, 409: undefined }, holder);
    }
    const headers = Object.assign({}, ...causes.map((c) => c.headers)) as Record<string, object>;
    const decorate = errorResponse(
      409,
      causes.map((c) => c.description).join(' Or: '),
      Object.keys(headers).length > 0 ? headers : undefined,
    );
    return descriptor ? decorate(target, key!, descriptor) : decorate(target as Type<unknown>);
  }) as MethodDecorator & ClassDecorator;

/**
 * A request the router refuses before the handler (a URL that does not percent-decode): the only
 * error of the health probes, which answer everything else themselves.
 */
export const ApiMalformedRequest = () =>
  errorResponse(400, 'Malformed request: the URL does not percent-decode.');

/**
 * Who may call the route and what it reads:
 * - `public-read` / `public-write`: no credentials; a write has a JSON body.
 * - `authenticated` / `authenticated-write`: credentials required (401, 403).
 */
export type RouteKind = 'public-read' | 'public-write' | 'authenticated' | 'authenticated-write';

export interface ErrorOptions {
  /** When it answers 404 (with 414 for an over-long path id, unless `pathId` is false). */
  notFound?: string;
  /** The 404 is about something in the body, not a path parameter (no 414). */
  pathId?: boolean;
  /** When it answers 409 (`@Idempotent()` adds its own cause to the same 409). */
  conflict?: string;
  /** It honours `If-Match` (412). */
  precondition?: boolean;
  /** A public route that still checks a credential (401), e.g. a password or refresh token. */
  unauthorized?: string;
  /** What 403 means here when it is more than the role rule. */
  forbidden?: string;
}

/** The error statuses a route can answer, each with the envelope of its codes. */
export const ApiStandardErrors = (kind: RouteKind, options: ErrorOptions = {}) => {
  const authenticated = kind === 'authenticated' || kind === 'authenticated-write';
  const write = kind === 'public-write' || kind === 'authenticated-write';
  const decorators: (MethodDecorator & ClassDecorator)[] = [
    errorResponse(
      400,
      write
        ? 'Malformed request: the body is not JSON, a query parameter is invalid, or the API version is not v1.'
        : 'Malformed request: a query parameter is invalid, or the API version is not v1.',
    ),
    errorResponse(406, 'The `Accept` header excludes application/json.'),
    errorResponse(429, 'Too many requests; retry after `Retry-After` seconds.', {
      'Retry-After': header('Retry-After'),
    }),
    errorResponse(500, 'Unexpected server fault; quote `request_id` when reporting it.'),
    errorResponse(503, 'The database is unreachable; retry after `Retry-After` seconds.', {
      'Retry-After': header('Retry-After'),
    }),
  ];
  if (authenticated || options.unauthorized) {
    decorators.push(
      errorResponse(
        401,
        options.unauthorized ??
          'Missing or invalid credentials; `WWW-Authenticate` names the schemes.',
        { 'WWW-Authenticate': header('WWW-Authenticate') },
      ),
    );
  }
  if (authenticated) {
    decorators.push(
      errorResponse(
        403,
        options.forbidden ??
          'The caller’s role, or an OAuth token’s scopes (`insufficient_scope`), do not allow this.',
      ),
    );
  }
  if (options.notFound) {
    decorators.push(errorResponse(404, options.notFound));
    if (options.pathId !== false) {
      decorators.push(errorResponse(414, 'A path segment exceeds 100 characters.'));
    }
  }
  if (options.conflict) {
    decorators.push(ApiConflict({ kind: 'route', description: options.conflict }));
  }
  if (options.precondition) {
    decorators.push(
      // the handler reads it with @Headers('if-match'), which alone would document it as required
      ApiHeader({
        name: 'if-match',
        required: false,
        // no `example`: Swagger UI fills "Try it out" fields with it (every change would be a 412)
        description:
          'The `ETag` of the version you changed (e.g. `"2c-1yW8Lh5nEkq3vZ0mHkq8aA"`): 412 if the resource has changed since.',
        schema: { type: 'string' },
      }),
      errorResponse(412, '`If-Match` does not match the current `ETag`.'),
    );
  }
  if (write) {
    decorators.push(
      errorResponse(413, 'The body exceeds 1 MiB.'),
      errorResponse(415, 'The body is not JSON (`Content-Type: application/json`).'),
      errorResponse(422, 'The body fails validation; `details` names each member and problem.'),
    );
  }
  return applyDecorators(...decorators);
};

/**
 * A streamed export of a list (docs/admin.md "Exports"): the list's sort, filters and other
 * parameters (no paging), NDJSON or CSV by `Accept`, one row per line in the REST representation
 * of `model`, at a fixed cost from the caller's cost budget. ADMIN only.
 */
export const ApiExport = (model: Type<unknown>, options: PageOptions, cost: number) =>
  applyDecorators(
    SetMetadata(FIXED_REQUEST_COST, cost),
    ApiExtraModels(model),
    ApiQuery({
      name: 'sort',
      required: false,
      schema: { type: 'string', pattern: sortPattern(options.sortFields) },
      description: `As on the list: comma-separated ${options.sortFields.join(', ')}; \`-\` for descending.`,
    }),
    ...Object.entries(options.filters ?? {}).map(([name, values]) =>
      ApiQuery({ name, required: false, schema: { type: 'string', enum: [...values] } }),
    ),
    ...Object.entries(options.parameters ?? {}).map(([name, { description, schema }]) =>
      ApiQuery({ name, required: false, description, schema }),
    ),
    ApiResponse({
      status: 200,
      description: `Every matching row, one per line, in the list's order (schema of a line: ${model.name.replace(/Response$/, '')}). NDJSON (the default) or CSV with a header line (nested members as JSON text), by \`Accept\`. Streamed: a failure after the first row ends the body early, without a final line break.`,
      content: {
        'application/x-ndjson': { schema: { type: 'string' } },
        'text/csv': { schema: { type: 'string' } },
      },
      headers: {
        'RateLimit-Cost-Remaining': header('RateLimit-Cost-Remaining'),
      },
    }),
    errorResponse(
      400,
      'Malformed request: a query parameter is invalid, or the API version is not v1.',
    ),
    errorResponse(401, 'Missing or invalid credentials; `WWW-Authenticate` names the schemes.', {
      'WWW-Authenticate': header('WWW-Authenticate'),
    }),
    errorResponse(403, 'Only ADMINs export (and an OAuth token needs the route’s scopes).'),
    errorResponse(406, 'The `Accept` header admits neither application/x-ndjson nor text/csv.'),
    errorResponse(
      429,
      `Too many requests; retry after \`Retry-After\` seconds. Or: an export costs ${cost} points of the caller’s cost budget and fewer are left (docs/rate-limits.md "List cost").`,
      {
        'Retry-After': header('Retry-After'),
        'RateLimit-Cost-Remaining': header('RateLimit-Cost-Remaining'),
      },
    ),
    errorResponse(500, 'Unexpected server fault; quote `request_id` when reporting it.'),
    errorResponse(503, 'The database is unreachable; retry after `Retry-After` seconds.', {
      'Retry-After': header('Retry-After'),
    }),
  );
