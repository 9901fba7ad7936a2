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
}

export interface ListSpec<F extends string = string> {
  /** REST member names that `sort` accepts. */
  sortFields: readonly string[];
  defaultSort: SortTerm[];
  /** Filter parameter -> allowed values. */
  filters: Record<F, readonly string[]>;
}

export const DEFAULT_LIMIT = 20;
export const MAX_LIMIT = 100;

function positiveInt(
  raw: unknown,
  name: string,
  max: number,
  details: ErrorDetail[],
): number | undefined {
  if (raw === undefined) {
    return undefined;
  }
  if (typeof raw !== 'string' || !/^\d{1,9}$/.test(raw) || Number(raw) < 1 || Number(raw) > max) {
    details.push({ field: name, message: `${name} must be an integer from 1 to ${max}` });
    return undefined;
  }
  return Number(raw);
}

/**
 * Parses page/limit/sort and the filters of a list endpoint. Any bad value -> 400 with `details`
 * naming each offending parameter; parameters the endpoint does not know are ignored.
 */
export function parseListQuery<F extends string>(
  query: Record<string, unknown>,
  spec: ListSpec<F>,
): ListQuery<F> {
  const details: ErrorDetail[] = [];
  const page = positiveInt(query.page, 'page', 1_000_000_000, details) ?? 1;
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
  return { page, limit, sort, filters };
}

/** ORDER BY clause for validated sort terms over whitelisted columns; ties broken by id. */
export function orderBySql(sort: SortTerm[], columns: Record<string, string>, alias = ''): string {
  const prefix = alias ? `${alias}.` : '';
  const terms = sort.map((t) => `${prefix}${columns[t.field]} ${t.desc ? 'DESC' : 'ASC'}`);
  const last = sort[sort.length - 1];
  terms.push(`${prefix}id ${last?.desc ? 'DESC' : 'ASC'}`);
  return terms.join(', ');
}

export interface PageMeta {
  page: number;
  limit: number;
  total: number;
}

export interface Page<T> {
  data: T[];
  meta: PageMeta;
}

/** RFC 8288 Link header: first, prev, next, last (absolute URLs, other query parameters kept). */
export function linkHeader(publicUrl: string, rawUrl: string, meta: PageMeta): string {
  const url = new URL(rawUrl, 'http://placeholder');
  url.searchParams.delete('api_key'); // never echo a credential back in a link
  const lastPage = Math.max(1, Math.ceil(meta.total / meta.limit));
  const at = (page: number) => {
    const params = new URLSearchParams(url.searchParams);
    params.set('page', String(page));
    params.set('limit', String(meta.limit));
    return `<${publicUrl}${url.pathname}?${params.toString()}>`;
  };
  const links = [`${at(1)}; rel="first"`];
  if (meta.page > 1) {
    links.push(`${at(Math.min(meta.page - 1, lastPage))}; rel="prev"`);
  }
  if (meta.page < lastPage) {
    links.push(`${at(meta.page + 1)}; rel="next"`);
  }
  links.push(`${at(lastPage)}; rel="last"`);
  return links.join(', ');
}
