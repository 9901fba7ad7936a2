import {
  DEFAULT_LIMIT,
  type ListQuery,
  type PageArgs,
  type SortTerm,
} from '../common/list-query.js';
import { connectionFromRows, type PageValue } from './connection-value.js';
import type { DatabaseService } from './database.service.js';
import {
  emptyListPage,
  encodeCursor,
  keysetSql,
  listPage,
  pageWindow,
  type ListPage,
  type ListPageSql,
} from './paging.js';

/**
 * The one read of a list's page, whichever transport asks (docs/lists.md, "Paging module"): a REST
 * page (page number or `cursor`) or a GraphQL window (`first`/`after`/`last`/`before`), both over
 * the list's one SQL description (`ListPageSql`: columns, table, filters, sort columns). It answers
 * one page value (`PageValue`: nodes, their cursors, pageInfo, total, page and limit) that the REST
 * controller and the GraphQL resolver only map (`restPageOf`, or the value itself as a
 * connection). Cursors are encoded here, in the list's one format.
 */

/**
 * The order key of a GraphQL window's cursors. Each list keeps the key its connection has always
 * issued (cursors held by clients stay valid byte for byte): `users:<field>` whatever the direction,
 * `created_at` for rooms; a list without an entry names its cursors as its REST pages do
 * (`orderKeyOf`: `<list>:<-field>`).
 */
const WINDOW_KEYS: Record<string, (sort: SortTerm) => string> = {
  users: (sort) => `users:${sort.field}`,
  rooms: () => 'created_at',
};

function windowKey(list: string, sort: SortTerm): string {
  return WINDOW_KEYS[list]?.(sort) ?? `${list}:${sort.desc ? '-' : ''}${sort.field}`;
}

/** A request as the list's service has checked it: a parsed REST query, or a GraphQL window. */
export type ListRequest = { query: ListQuery } | { window: PageArgs; sort: SortTerm };

/** The page `request` asks for: `restPage` or `windowPage`. */
export function readPage<R extends { id: string }>(
  db: DatabaseService,
  sql: ListPageSql,
  request: ListRequest,
  total: () => Promise<number>,
): Promise<PageValue<R>> {
  return 'query' in request
    ? restPage<R>(db, sql, request.query, total())
    : windowPage<R>(db, sql, request.window, request.sort, total);
}

/**
 * The REST query a forward GraphQL window (`first`/`after`) reads, for the lists whose connection
 * pages as their REST list does, with the same cursors (`auditEvents`, `orders`): `first` rows
 * after the position `after` names, in the order of `sort`.
 */
export function windowAsQuery(window: PageArgs, sort: SortTerm): ListQuery {
  return {
    page: 1,
    limit: window.first ?? DEFAULT_LIMIT,
    sort: [sort],
    filters: {},
    cursor: window.after ?? undefined,
  };
}

/** A REST page: `listPage` with its total read at once, as the page's value. */
export async function restPage<R extends { id: string }>(
  db: DatabaseService,
  sql: ListPageSql,
  query: ListQuery,
  total: Promise<number>,
): Promise<PageValue<R>> {
  return valueOf(await listPage<R>(db, sql, query, total), query);
}

/** The page of a list whose filter is known to match nothing: no statement runs. */
export function emptyPage<R>(query: ListQuery): PageValue<R> {
  return valueOf(emptyListPage<R>(query), query);
}

function valueOf<R>(page: ListPage<R>, query: ListQuery): PageValue<R> {
  return new ListPageValue(page, query);
}

/**
 * A REST page as a page value. A class (getters on its prototype), not an object literal with
 * getters, which defines each accessor on every instance at run time (connection-value.ts).
 */
class ListPageValue<R> implements PageValue<R> {
  readonly nodes: R[];
  readonly pageInfo: ListPageInfo<R>;
  readonly totalCount: number | Promise<number>;
  readonly page: number | null;
  readonly limit: number;

  constructor(listPage: ListPage<R>, query: ListQuery) {
    this.nodes = listPage.rows;
    this.pageInfo = new ListPageInfo(listPage, query);
    this.totalCount = listPage.meta.total;
    this.page = listPage.meta.page;
    this.limit = listPage.meta.limit;
  }

  get edges(): { cursor: string; node: R }[] {
    return this.pageInfo.edgesOf();
  }
}

class ListPageInfo<R> {
  readonly hasNextPage: boolean;
  readonly hasPreviousPage: boolean;
  private edgeList: { cursor: string; node: R }[] | undefined = undefined;

  constructor(
    private readonly listPage: ListPage<R>,
    query: ListQuery,
  ) {
    this.hasNextPage = listPage.next !== null;
    this.hasPreviousPage = query.cursor !== undefined || listPage.meta.page !== 1;
  }

  /** The edges, built once (not a GraphQL field of PageInfo). */
  edgesOf(): { cursor: string; node: R }[] {
    return (this.edgeList ??= this.listPage.rows.map((node, i) => ({
      cursor: this.listPage.cursorAt(i),
      node,
    })));
  }

  // one cursor each, not the edges': a REST page reads only `next` (its last row's cursor)
  get startCursor(): string | null {
    const { rows } = this.listPage;
    return rows.length > 0 ? this.listPage.cursorAt(0) : null;
  }

  get endCursor(): string | null {
    const { rows, next } = this.listPage;
    return next ?? (rows.length > 0 ? this.listPage.cursorAt(rows.length - 1) : null);
  }
}

/**
 * A GraphQL window over the list: `first`/`after` forward, `last`/`before` backward, ordered by
 * one sort term and the id. The total (`total`, the counters) and the "is there a row beyond the
 * cursor" checks of hasPreviousPage/hasNextPage run only when selected.
 */
async function windowPage<R extends { id: string }>(
  db: DatabaseService,
  sql: ListPageSql,
  args: PageArgs,
  sort: SortTerm,
  total: () => Promise<number>,
): Promise<PageValue<R>> {
  const key = windowKey(sql.list, sort);
  const window = pageWindow(args, key);
  const column = sql.sortColumns[sort.field];
  const params = [...sql.params];
  const p = (n: number) => db.p(n);
  const ks = keysetSql(window, column, sort.desc, p, params);
  const where = [...sql.where, ...ks.where];
  const rows = await db.query<R & Record<string, unknown>>(
    `SELECT ${sql.columns} FROM ${sql.from}${where.length > 0 ? ` WHERE ${where.join(' AND ')}` : ''}
     ORDER BY ${ks.orderBy} LIMIT ${p(params.length + 1)}`,
    [...params, ks.limit],
  );
  /** Is there a row at or before (`upto`) / at or after (`from`) a keyset position? */
  const existsAround = async (position: [unknown, string], side: 'upto' | 'from') => {
    const near = [...sql.params, position[0], position[1]];
    const op = (side === 'upto') !== sort.desc ? '<=' : '>=';
    const found = await db.query<{ one: number }>(
      `SELECT 1 AS one FROM ${sql.from} WHERE ${[
        ...sql.where,
        `(${column}, id) ${op} (${p(near.length - 1)}, ${p(near.length)})`,
      ].join(' AND ')} LIMIT 1`,
      near,
    );
    return found.length > 0;
  };
  return connectionFromRows(rows, window, (row) => encodeCursor(key, [row[column]], row.id), {
    totalCount: total,
    existsBeyond: (side) =>
      side === 'before-after'
        ? existsAround(window.after!, 'upto')
        : existsAround(window.before!, 'from'),
  });
}
