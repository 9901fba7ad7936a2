import { BadRequest, type DomainError, type ErrorDetail } from '../common/errors.js';
import { isId } from '../common/ids.js';
import {
  DEFAULT_LIMIT,
  MAX_LIMIT,
  type ListQuery,
  type PageArgs,
  type PageMeta,
  type SortTerm,
} from '../common/list-query.js';
import { isStorableText } from '../common/validation.js';
import type { DatabaseService } from './database.service.js';

/**
 * Paging of every list, REST and GraphQL (docs/lists.md, "Paging module: how to add a list"): the one
 * cursor encoding, the keyset SQL, REST pages (page number or cursor) and the keyset windows of the
 * GraphQL connections. Below the services, so that a repository or a service never imports the
 * GraphQL or HTTP layers.
 *
 * A cursor is base64url of the JSON triple `[orderKey, value, id]`: `orderKey` names the list and
 * its order (`users:-name,created_at`), `value` is the row's sort value (an array of them with
 * several sort fields) and `id` its tie-break. A cursor of another list or ordering is refused.
 * `Message.cursor` is the same triple as `["msg", roomId, seq]`.
 */

type Scalar = string | number;

/** Longest cursor accepted: the REST `cursor` parameter and GraphQL `after`/`before`. */
const MAX_CURSOR_LENGTH = 400;

function encodeTriple(triple: readonly [string, unknown, unknown]): string {
  return Buffer.from(JSON.stringify(triple)).toString('base64url');
}

/** The triple a cursor encodes, or undefined when it is not one. */
function decodeTriple(cursor: string, maxLength = MAX_CURSOR_LENGTH): unknown[] | undefined {
  if (cursor.length > maxLength || !/^[A-Za-z0-9_-]+$/.test(cursor)) {
    return undefined;
  }
  try {
    const parsed: unknown = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
    return Array.isArray(parsed) && parsed.length === 3 ? parsed : undefined;
  } catch {
    return undefined;
  }
}

const scalar = (v: unknown): v is Scalar =>
  isStorableText(v) || (typeof v === 'number' && Number.isFinite(v));

// ---- list cursors ------------------------------------------------------------------------------

/** Where a row stands in a list's order: its sort values and its id. */
export interface KeysetPosition {
  values: Scalar[];
  id: string;
}

/** `users:-name,created_at`: the list and its sort terms. */
export function orderKeyOf(list: string, sort: readonly SortTerm[]): string {
  return `${list}:${sort.map((t) => `${t.desc ? '-' : ''}${t.field}`).join(',')}`;
}

/** The cursor of a row at `values` (one per sort term) and `id` in the order `orderKey` names. */
export function encodeCursor(orderKey: string, values: readonly unknown[], id: string): string {
  return encodeTriple([orderKey, values.length === 1 ? values[0] : values, id]);
}

/** The position `cursor` names in `orderKey`'s order (`width` sort values), or `invalid()`. */
export function decodeCursor(
  cursor: string,
  orderKey: string,
  width: number,
  invalid: () => DomainError,
): KeysetPosition {
  const triple = decodeTriple(cursor);
  if (triple && triple[0] === orderKey && isStorableText(triple[2])) {
    const values: unknown = width === 1 ? [triple[1]] : triple[1];
    if (Array.isArray(values) && values.length === width && values.every(scalar)) {
      return { values, id: triple[2] };
    }
  }
  throw invalid();
}

/** REST: a `cursor` parameter that is not one of this list and sort. */
const restCursorError = () =>
  BadRequest('Invalid query parameters', [
    {
      field: 'cursor',
      message: 'cursor is not a cursor of this list and sort (take it from the Link header)',
    },
  ]);

/** GraphQL: an `after`/`before` argument that is not one of this connection and ordering. */
const argCursorError = (argName: string) => () =>
  BadRequest(`Invalid cursor in ${argName}`, [
    { field: argName, message: `${argName} is not a cursor of this list (or of this ordering)` },
  ]);

// ---- Message.cursor ----------------------------------------------------------------------------

/**
 * `Message.cursor`: where a message stands in its room, `["msg", roomId, seq]`, `seq` being the
 * room's commit order (rooms.last_seq at the send): it names its room and a position in it and
 * needs no look-up to be understood.
 */
export function encodeMessageCursor(roomId: string, seq: number): string {
  return encodeTriple(['msg', roomId, seq]);
}

/**
 * The position (seq) a message cursor of `roomId` names. A malformed cursor or one of another room
 * is BAD_USER_INPUT naming `argName`.
 */
export function decodeMessageCursor(cursor: string, roomId: string, argName = 'after'): number {
  const triple = decodeTriple(cursor, 200);
  const valid =
    triple !== undefined &&
    triple[0] === 'msg' &&
    isId('room', triple[1]) &&
    Number.isSafeInteger(triple[2]) &&
    (triple[2] as number) >= 1;
  if (!valid) {
    throw BadRequest(`Invalid cursor in ${argName}`, [
      { field: argName, message: `${argName} is not a message cursor (Message.cursor)` },
    ]);
  }
  if (triple[1] !== roomId) {
    throw BadRequest(`Invalid cursor in ${argName}`, [
      { field: argName, message: `${argName} is the cursor of a message of another room` },
    ]);
  }
  return triple[2] as number;
}

// ---- keyset SQL --------------------------------------------------------------------------------

/** ORDER BY clause for validated sort terms over whitelisted columns; ties broken by id. */
export function orderBySql(
  sort: readonly SortTerm[],
  columns: Record<string, string>,
  alias = '',
): string {
  const prefix = alias ? `${alias}.` : '';
  const terms = sort.map((t) => `${prefix}${columns[t.field]} ${t.desc ? 'DESC' : 'ASC'}`);
  const last = sort[sort.length - 1];
  terms.push(`${prefix}id ${last?.desc ? 'DESC' : 'ASC'}`);
  return terms.join(', ');
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

// ---- REST pages --------------------------------------------------------------------------------

export interface ListPageSql {
  /** Name of the list in its cursors (`users`, `posts`, `orders`, `rooms`, `messages`). */
  list: string;
  columns: string;
  from: string;
  /** Filter terms (whitelisted SQL), values in `params`. */
  where: string[];
  params: unknown[];
  /** REST sort field -> column; each column must be among `columns` (the cursor reads it). */
  sortColumns: Record<string, string>;
  /**
   * The sort columns alone are unique (messages: `seq` within a room): no `id` tie-break in ORDER BY
   * and the keyset, so the unique index on them serves the order as it is.
   */
  uniqueSort?: boolean;
}

export interface ListPage<R> {
  rows: R[];
  meta: PageMeta;
  /** Cursor of the next page (`Link: rel="next"`), null on the last page. */
  next: string | null;
  /**
   * The cursor of `rows[index]` in this list's order: the list's one cursor format, the same token
   * as `next` (and as the GraphQL edges' cursors of the lists that map this page to a connection).
   * Encoded on demand: a REST page reads none but its last.
   */
  cursorAt: (index: number) => string;
}

/**
 * One page of a REST list: by keyset when the query carries a `cursor`, else by page number (OFFSET,
 * allowed only down to MAX_OFFSET_DEPTH rows: parseListQuery refuses deeper pages). Either way the
 * page fetches `limit + 1` rows to know whether a next page exists and returns the cursor of its
 * last row. `total` is passed in: the counters (CountersRepository) answer it in O(1).
 */
export async function listPage<R extends { id: string }>(
  db: DatabaseService,
  sql: ListPageSql,
  query: ListQuery,
  total: Promise<number>,
): Promise<ListPage<R>> {
  const orderKey = orderKeyOf(sql.list, query.sort);
  const params = [...sql.params];
  const where = [...sql.where];
  let offset = 0;
  if (query.cursor !== undefined) {
    const position = decodeCursor(query.cursor, orderKey, query.sort.length, restCursorError);
    where.push(
      keysetAfterSql(
        query.sort,
        sql.sortColumns,
        position,
        (n) => db.p(n),
        params,
        !sql.uniqueSort,
      ),
    );
  } else {
    offset = (query.page - 1) * query.limit;
  }
  const n = params.length;
  const orderBy = sql.uniqueSort
    ? query.sort.map((t) => `${sql.sortColumns[t.field]} ${t.desc ? 'DESC' : 'ASC'}`).join(', ')
    : orderBySql(query.sort, sql.sortColumns);
  // LIMIT/OFFSET are bound, not inlined, so one prepared statement serves every page
  const rowsQuery = db.query<R>(
    `SELECT ${sql.columns} FROM ${sql.from}${where.length > 0 ? ` WHERE ${where.join(' AND ')}` : ''}
     ORDER BY ${orderBy} LIMIT ${db.p(n + 1)} OFFSET ${db.p(n + 2)}`,
    [...params, query.limit + 1, offset],
  );
  const [rows, count] = await Promise.all([rowsQuery, total]);
  const more = rows.length > query.limit;
  const page = more ? rows.slice(0, query.limit) : rows;
  const cursorAt = (index: number): string => {
    const row = page[index] as R & Record<string, unknown>;
    return encodeCursor(
      orderKey,
      query.sort.map((t) => row[sql.sortColumns[t.field]]),
      row.id,
    );
  };
  const next = more && page.length > 0 ? cursorAt(page.length - 1) : null;
  const pageNumber = query.cursor !== undefined && !query.pageGiven ? null : query.page;
  return {
    rows: page,
    meta: { page: pageNumber, limit: query.limit, total: count },
    next,
    cursorAt,
  };
}

/**
 * The page of a list whose filter is known to match nothing (no statement run), shaped as
 * `listPage` answers an empty page.
 */
export function emptyListPage<R>(query: ListQuery): ListPage<R> {
  return {
    rows: [],
    meta: {
      page: query.cursor !== undefined && !query.pageGiven ? null : query.page,
      limit: query.limit,
      total: 0,
    },
    next: null,
    cursorAt: (index) => {
      throw new RangeError(`an empty page has no row ${index}`);
    },
  };
}

/**
 * One page of a list paged by page number only (`GET /api-keys`, OAuth clients: few rows per
 * caller, outside the O(1) lists): the total with COUNT(*) (TypeORM's COUNT(1) is a scan on
 * SQLite) and the page's rows. `from`, `where` and `orderBy` are SQL built from whitelisted names
 * only; values travel in `params`.
 */
export async function numberedPage<R>(
  db: DatabaseService,
  sql: { columns: string; from: string; where: string; orderBy: string },
  params: unknown[],
  query: Pick<ListQuery, 'page' | 'limit'>,
): Promise<{ rows: R[]; meta: PageMeta }> {
  const [count] = await db.query<{ total: number | string }>(
    `SELECT COUNT(*) AS total FROM ${sql.from} WHERE ${sql.where}`,
    params,
  );
  // LIMIT/OFFSET are bound, not inlined, so one prepared statement serves every page
  const n = params.length;
  const rows = await db.query<R>(
    `SELECT ${sql.columns} FROM ${sql.from} WHERE ${sql.where} ORDER BY ${sql.orderBy}
     LIMIT ${db.p(n + 1)} OFFSET ${db.p(n + 2)}`,
    [...params, query.limit, (query.page - 1) * query.limit],
  );
  return {
    rows,
    meta: { page: query.page, limit: query.limit, total: Number(count?.total ?? 0) },
  };
}

// ---- connection windows (GraphQL first/after/last/before) -------------------------------------

/** Validated paging: how many rows, which way, between which keyset positions. */
export interface PageWindow {
  size: number;
  backward: boolean;
  after?: [Scalar, string];
  before?: [Scalar, string];
}

/** The window `first`/`after`/`last`/`before` ask for, over cursors of `orderKey` (one sort value). */
export function pageWindow(args: PageArgs, orderKey: string, max = MAX_LIMIT): PageWindow {
  const details: ErrorDetail[] = [];
  const count = (name: 'first' | 'last') => {
    const v = args[name];
    if (v === undefined || v === null) {
      return undefined;
    }
    if (!Number.isInteger(v) || v < 0 || v > max) {
      details.push({ field: name, message: `${name} must be an integer from 0 to ${max}` });
    }
    return v;
  };
  const first = count('first');
  const last = count('last');
  if (first !== undefined && last !== undefined) {
    details.push({ field: 'last', message: 'first and last cannot be combined' });
  }
  if (details.length > 0) {
    throw BadRequest('Invalid paging arguments', details);
  }
  const position = (argName: 'after' | 'before'): [Scalar, string] | undefined => {
    const cursor = args[argName];
    if (!cursor) {
      return undefined;
    }
    const { values, id } = decodeCursor(cursor, orderKey, 1, argCursorError(argName));
    return [values[0], id];
  };
  return {
    size: first ?? last ?? DEFAULT_LIMIT,
    backward: last !== undefined,
    after: position('after'),
    before: position('before'),
  };
}

/**
 * SQL pieces of a keyset page over `(column, id)` ordered `desc` or not. `p(n)` is the dialect's
 * placeholder; `params` receives the bound values. Fetch `limit` rows (one more than the page size)
 * with `ORDER BY orderBy` and hand them to `connectionFromRows` (below).
 */
export function keysetSql(
  window: PageWindow,
  column: string,
  desc: boolean,
  p: (n: number) => string,
  params: unknown[],
  alias = '',
): { where: string[]; orderBy: string; limit: number } {
  const col = alias ? `${alias}.${column}` : column;
  const id = alias ? `${alias}.id` : 'id';
  const where: string[] = [];
  let n = params.length + 1;
  params.push(...keysetParams(window));
  const bound = (op: '>' | '<') => {
    where.push(`(${col}, ${id}) ${op} (${p(n)}, ${p(n + 1)})`);
    n += 2;
  };
  if (window.after) {
    bound(desc ? '<' : '>');
  }
  if (window.before) {
    bound(desc ? '>' : '<');
  }
  const scanDesc = desc !== window.backward;
  const dir = scanDesc ? 'DESC' : 'ASC';
  return { where, orderBy: `${col} ${dir}, ${id} ${dir}`, limit: window.size + 1 };
}

/** The values `keysetSql` binds for `window`, in its order: `after`'s position, then `before`'s. */
export function keysetParams(window: PageWindow): unknown[] {
  const values: unknown[] = [];
  if (window.after) {
    values.push(window.after[0], window.after[1]);
  }
  if (window.before) {
    values.push(window.before[0], window.before[1]);
  }
  return values;
}

/**
 * What `keysetSql`'s text depends on in `window` (its size and which bounds it has, not their
 * values): with the column and order, the key of a text built once (`SqlTexts`).
 */
export function windowShape(window: PageWindow): string {
  return `${window.size}${window.backward ? 'b' : 'f'}${window.after ? 'a' : ''}${window.before ? 'z' : ''}`;
}
