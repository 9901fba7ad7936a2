import { BadRequest } from '../common/errors.js';
import type { SortTerm } from '../common/list-query.js';

/**
 * Keyset (cursor) paging for the REST lists. A cursor is the position of a page's last row in the
 * list's order: base64url of `[orderKey, value, id]` (one sort field; the GraphQL connections' cursor
 * format, src/graphql/connection.ts) or `[orderKey, [values…], id]` (several). `orderKey` names the
 * list and its sort, so a cursor of another list or ordering is refused (400, `details` naming
 * `cursor`). The next page is the rows strictly after that position, found by one index range:
 * following `Link: rel="next"` costs the same on page 1 and page 50 000.
 */

type Scalar = string | number;

export interface KeysetPosition {
  values: Scalar[];
  id: string;
}

/** `users:-name,created_at`: the list and its sort terms. */
export function orderKeyOf(list: string, sort: readonly SortTerm[]): string {
  return `${list}:${sort.map((t) => `${t.desc ? '-' : ''}${t.field}`).join(',')}`;
}

export function encodeListCursor(orderKey: string, values: readonly unknown[], id: string): string {
  const value = values.length === 1 ? values[0] : values;
  return Buffer.from(JSON.stringify([orderKey, value, id])).toString('base64url');
}

export function decodeListCursor(cursor: string, orderKey: string, width: number): KeysetPosition {
  const scalar = (v: unknown): v is Scalar => typeof v === 'string' || typeof v === 'number';
  try {
    const parsed: unknown = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
    if (
      Array.isArray(parsed) &&
      parsed.length === 3 &&
      parsed[0] === orderKey &&
      typeof parsed[2] === 'string'
    ) {
      const values: unknown[] = width === 1 ? [parsed[1]] : (parsed[1] as unknown[]);
      if (Array.isArray(values) && values.length === width && values.every(scalar)) {
        return { values: values, id: parsed[2] };
      }
    }
  } catch {
    // fall through to the error below
  }
  throw BadRequest('Invalid query parameters', [
    {
      field: 'cursor',
      message: 'cursor is not a cursor of this list and sort (take it from the Link header)',
    },
  ]);
}

/**
 * The WHERE term "after `position`" in the order of `sort` (ties broken by id, in the direction of
 * the last term, like orderBySql). With one direction throughout it is a row-value comparison,
 * `(a, b, id) > (?, ?, ?)`, which both SQLite and PostgreSQL answer as one range of an index on
 * `(a, b, id)`; mixed directions need the expanded OR form.
 */
export function keysetAfterSql(
  sort: readonly SortTerm[],
  columns: Record<string, string>,
  position: KeysetPosition,
  p: (n: number) => string,
  params: unknown[],
  withId = true,
): string {
  const desc = sort[sort.length - 1]?.desc ?? false;
  const terms = [
    ...sort.map((t, i) => ({ col: columns[t.field], desc: t.desc, value: position.values[i] })),
    ...(withId ? [{ col: 'id', desc, value: position.id as Scalar }] : []),
  ];
  const bind = (v: Scalar) => {
    params.push(v);
    return p(params.length);
  };
  if (terms.every((t) => t.desc === terms[0].desc)) {
    const cols = terms.map((t) => t.col).join(', ');
    const values = terms.map((t) => bind(t.value)).join(', ');
    return `(${cols}) ${terms[0].desc ? '<' : '>'} (${values})`;
  }
  const ors = terms.map((t, i) => {
    const eqs = terms.slice(0, i).map((e) => `${e.col} = ${bind(e.value)}`);
    return `(${[...eqs, `${t.col} ${t.desc ? '<' : '>'} ${bind(t.value)}`].join(' AND ')})`;
  });
  return `(${ors.join(' OR ')})`;
}

/**
 * Empties a keyset scan's batch once its reader is done with it (the exports: after the batch is
 * written out). On PostgreSQL the array is node-postgres' `result.rows`, which V8 soon allocates
 * straight in the old generation (allocation-site pretenuring: the array of the batch being received
 * is alive at every young-generation collection). Objects an old array points to survive the young
 * collections even once the array is garbage, and are promoted: every exported row reached the old
 * generation, which grew by ~200 MB between full collections at 1M rows (docs/performance.md,
 * "GET /orders/export"). Emptied, the array holds nothing and the rows die young.
 */
export function releaseBatch(rows: unknown[]): void {
  rows.length = 0;
}
