import { ApiProperty, ApiSchema } from '@nestjs/swagger';
import { BadRequest, type ErrorDetail } from './errors.js';

export interface SortTerm {
  field: string;
  desc: boolean;
}

export interface ListQuery<F extends string = string> {
  page: number;
  limit: number;
  sort: SortTerm[];
  filters: Partial<Record<F, string>>;
  /** `cursor`: a keyset position (from `Link: rel="next"`); decoded by the list (src/database/paging.ts). */
  cursor?: string;
  /** Whether `page` was given (with a cursor it only labels the page in `meta` and `Link`). */
  pageGiven?: boolean;
}

export interface ListSpec<F extends string = string> {
  /** REST member names that `sort` accepts. */
  sortFields: readonly string[];
  defaultSort: SortTerm[];
  /** Filter parameter -> allowed values. */
  filters: Record<F, readonly string[]>;
  /**
   * The list's other query parameters, which its service reads itself (`author_id`, `after`):
   * documented by `ApiPage` like the rest, so they are accepted (src/http/query-params.ts).
   */
  parameters?: Record<string, { description: string; schema: Record<string, unknown> }>;
  /**
   * Members of a row that cost more than 1 point (large text, priced as GraphQL's `@cost` prices
   * the same field): a page is charged to the caller's cost budget (src/rate-limit/list-cost.ts).
   */
  memberCosts?: Record<string, number>;
}

export const DEFAULT_LIMIT = 20;
export const MAX_LIMIT = 100;
/**
 * Deepest row a page number may reach (`page * limit`): OFFSET walks every skipped row, so deeper
 * pages are reached by following `Link: rel="next"`, whose keyset cursor costs the same at any depth.
 */
const MAX_OFFSET_DEPTH = 10_000;
/** Largest `page` number that parses (with a cursor it only labels the page). */
export const MAX_PAGE = 1_000_000_000;

function positiveInt(
  raw: unknown,
  name: string,
  max: number,
  details: ErrorDetail[],
): number | undefined {
  if (raw === undefined) {
    return undefined;
  }
  if (typeof raw !== 'string' || !/^\d{1,10}$/.test(raw) || Number(raw) < 1 || Number(raw) > max) {
    details.push({ field: name, message: `${name} must be an integer from 1 to ${max}` });
    return undefined;
  }
  return Number(raw);
}

/**
 * Parses page/limit/sort and the filters of a list endpoint. Any bad value -> 400 with `details`
 * naming each offending parameter (parameters the endpoint does not document never get here:
 * src/http/query-params.ts refuses them).
 */
export function parseListQuery<F extends string>(
  query: Record<string, unknown>,
  spec: ListSpec<F>,
): ListQuery<F> {
  const details: ErrorDetail[] = [];
  const page = positiveInt(query.page, 'page', MAX_PAGE, details) ?? 1;
  const limit = positiveInt(query.limit, 'limit', MAX_LIMIT, details) ?? DEFAULT_LIMIT;

  let sort = spec.defaultSort;
  if (query.sort !== undefined) {
    const terms: SortTerm[] = [];
    const raw = typeof query.sort === 'string' ? query.sort : '';
    for (const part of raw.split(',')) {
      const desc = part.startsWith('-');
      const field = desc ? part.slice(1) : part;
      if (!spec.sortFields.includes(field) || terms.some((t) => t.field === field)) {
        details.push({
          field: 'sort',
          message: `sort must be a comma-separated list of ${spec.sortFields.join(', ')} (each optionally prefixed by -)`,
        });
        break;
      }
      terms.push({ field, desc });
    }
    sort = terms;
  }

  let cursor: string | undefined;
  if (query.cursor !== undefined) {
    if (typeof query.cursor !== 'string' || !/^[A-Za-z0-9_-]{1,400}$/.test(query.cursor)) {
      details.push({ field: 'cursor', message: 'cursor must be the cursor of a Link header' });
    } else {
      cursor = query.cursor;
    }
  }
  if (query.cursor === undefined && page * limit > MAX_OFFSET_DEPTH) {
    details.push({
      field: 'page',
      message:
        `page * limit may be at most ${MAX_OFFSET_DEPTH}: to go deeper, follow the ` +
        `Link rel="next" URL (its cursor parameter costs the same at any depth)`,
    });
  }

  const filters: Partial<Record<F, string>> = {};
  for (const [name, allowed] of Object.entries(spec.filters) as [F, readonly string[]][]) {
    const value = query[name];
    if (value === undefined) {
      continue;
    }
    if (typeof value !== 'string' || !allowed.includes(value)) {
      details.push({ field: name, message: `${name} must be one of ${allowed.join(', ')}` });
      continue;
    }
    filters[name] = value;
  }

  if (details.length > 0) {
    throw BadRequest('Invalid query parameters', details);
  }
  return { page, limit, sort, filters, cursor, pageGiven: query.page !== undefined };
}

/** `meta` of a page (docs/lists.md); also the schema of `meta` in the OpenAPI document. */
@ApiSchema({ name: 'PageMeta' })
export class PageMeta {
  /** null on a cursor page reached without a page number */
  @ApiProperty({
    type: 'integer',
    nullable: true,
    minimum: 1,
    example: 1,
    description: 'null on a page reached by `cursor` without a page number',
  })
  page!: number | null;

  @ApiProperty({ type: 'integer', minimum: 1, maximum: MAX_LIMIT, example: DEFAULT_LIMIT })
  limit!: number;

  @ApiProperty({ type: 'integer', minimum: 0, example: 42, description: 'Items in the whole list' })
  total!: number;
}

export interface Page<T> {
  data: T[];
  meta: PageMeta;
  /** Keyset cursor of the next page (lists paged by cursor; null on the last page). */
  next?: string | null;
}

/** The paging arguments of a GraphQL connection (Relay): validated by the paging module. */
export interface PageArgs {
  first?: number | null;
  after?: string | null;
  last?: number | null;
  before?: string | null;
}

/**
 * What a transport asks of a list, answered by the list's one service method (docs/lists.md,
 * "Paging module"): a REST page (`rest`: the raw query parameters, which the list's `ListSpec`
 * parses) or a GraphQL window (`window`: the connection's paging arguments, ordered by `sort`, one
 * term). The filters travel beside it, in the service method's own arguments.
 */
export type PageRequest = { rest: Record<string, unknown> } | { window: PageArgs; sort: SortTerm };

/**
 * RFC 8288 Link header: first, prev, next, last (absolute URLs, other query parameters kept).
 * `next` is the keyset cursor of the page's last row (null on the last page) for lists that page by
 * cursor; lists without one (`undefined`) link page numbers. `prev` and `last` are page numbers and
 * are left out where that page would be deeper than MAX_OFFSET_DEPTH.
 */
export function linkHeader(
  publicUrl: string,
  rawUrl: string,
  meta: PageMeta,
  next?: string | null,
): string {
  const url = new URL(rawUrl, 'http://placeholder');
  url.searchParams.delete('api_key'); // never echo a credential back in a link
  url.searchParams.delete('cursor');
  const lastPage = Math.max(1, Math.ceil(meta.total / meta.limit));
  const shallow = (page: number) => page * meta.limit <= MAX_OFFSET_DEPTH;
  const at = (page: number | null, cursor?: string) => {
    const params = new URLSearchParams(url.searchParams);
    if (page === null) {
      params.delete('page');
    } else {
      params.set('page', String(page));
    }
    params.set('limit', String(meta.limit));
    if (cursor) {
      params.set('cursor', cursor);
    }
    return `<${publicUrl}${url.pathname}?${params.toString()}>`;
  };
  const links = [`${at(1)}; rel="first"`];
  const page = meta.page;
  if (page !== null && page > 1 && shallow(Math.min(page - 1, lastPage))) {
    links.push(`${at(Math.min(page - 1, lastPage))}; rel="prev"`);
  }
  if (next !== undefined) {
    if (next !== null) {
      links.push(`${at(page === null ? null : page + 1, next)}; rel="next"`);
    }
  } else if (page !== null && page < lastPage) {
    links.push(`${at(page + 1)}; rel="next"`);
  }
  if (shallow(lastPage)) {
    links.push(`${at(lastPage)}; rel="last"`);
  }
  return links.join(', ');
}
