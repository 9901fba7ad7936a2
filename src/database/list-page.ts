import { decodeListCursor, encodeListCursor, keysetAfterSql, orderKeyOf } from './keyset.js';
import { orderBySql, type ListQuery, type PageMeta } from '../common/list-query.js';
import type { DatabaseService } from './database.service.js';

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
    const position = decodeListCursor(query.cursor, orderKey, query.sort.length);
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
  const last = page[page.length - 1] as (R & Record<string, unknown>) | undefined;
  const next =
    more && last
      ? encodeListCursor(
          orderKey,
          query.sort.map((t) => last[sql.sortColumns[t.field]]),
          last.id,
        )
      : null;
  const pageNumber = query.cursor !== undefined && !query.pageGiven ? null : query.page;
  return { rows: page, meta: { page: pageNumber, limit: query.limit, total: count }, next };
}
