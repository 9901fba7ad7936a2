import type { Page } from '../common/list-query.js';
import type { PageWindow } from './paging.js';

/**
 * The runtime values of GraphQL connections, built from the pages of the paging module
 * (`paging.ts`, `page-reader.ts`): from keyset rows (`connectionFromRows`); and the one page value
 * (`PageValue`) a list's service method answers to REST and GraphQL alike.
 */
/** Runtime shape of a connection. Promise-valued getters are evaluated only when selected. */
export interface ConnectionValue<T> {
  readonly edges: { cursor: string; node: T }[];
  nodes: T[];
  pageInfo: {
    readonly hasNextPage: boolean | Promise<boolean>;
    readonly hasPreviousPage: boolean | Promise<boolean>;
    readonly startCursor: string | null;
    readonly endCursor: string | null;
  };
  /** May be a promise: computed only when selected (see connectionFromRows). */
  readonly totalCount: number | Promise<number>;
}

/** The lazy parts of a connection from keyset rows: `lazy.totalCount`/`existsBeyond` callbacks. */
interface LazyParts {
  totalCount: () => Promise<number>;
  /** Is there any row before `after` (forward paging) / after `before` (backward paging)? */
  existsBeyond?: (side: 'before-after' | 'after-before') => Promise<boolean>;
}

/**
 * `pageInfo` of a connection from keyset rows. A class, not an object literal with getters: each
 * getter of a literal is defined on every instance at run time (a map transition per accessor,
 * ~6 per connection; a 20-user page builds 20 connections), where a class's are on its prototype.
 * The edges (and so the cursors) are built here once, when first read.
 */
class RowsPageInfo<T> {
  private edgeList: { cursor: string; node: T }[] | undefined = undefined;

  constructor(
    private readonly page: T[],
    private readonly window: PageWindow,
    private readonly more: boolean,
    private readonly cursorOf: (row: T) => string,
    readonly lazy: LazyParts,
  ) {}

  /** The edges, built once (not a GraphQL field of PageInfo). */
  edgesOf(): { cursor: string; node: T }[] {
    return (this.edgeList ??= this.page.map((node) => ({ cursor: this.cursorOf(node), node })));
  }

  private beyond(
    given: unknown,
    side: 'before-after' | 'after-before',
  ): Promise<boolean> | boolean {
    return given && this.lazy.existsBeyond ? this.lazy.existsBeyond(side) : false;
  }

  // the extra statements run only when the client selects these fields
  get hasNextPage(): Promise<boolean> | boolean {
    return this.window.backward ? this.beyond(this.window.before, 'after-before') : this.more;
  }

  get hasPreviousPage(): Promise<boolean> | boolean {
    return this.window.backward ? this.more : this.beyond(this.window.after, 'before-after');
  }

  get startCursor(): string | null {
    return this.edgesOf()[0]?.cursor ?? null;
  }

  get endCursor(): string | null {
    const all = this.edgesOf();
    return all[all.length - 1]?.cursor ?? null;
  }
}

/** A connection from keyset rows (`connectionFromRows`); a window's page value as it is. */
class RowsConnection<T> implements PageValue<T> {
  readonly nodes: T[];
  readonly pageInfo: RowsPageInfo<T>;
  readonly page = null;
  readonly limit: number;

  constructor(rows: T[], window: PageWindow, cursorOf: (row: T) => string, lazy: LazyParts) {
    const more = rows.length > window.size;
    const page = more ? rows.slice(0, window.size) : rows.slice();
    if (window.backward) {
      page.reverse();
    }
    this.nodes = page;
    this.limit = window.size;
    this.pageInfo = new RowsPageInfo(page, window, more, cursorOf, lazy);
  }

  // Edges and cursors are built only when selected (a page of 20 users asking for `nodes` of 5
  // posts each would otherwise encode 120 cursors nobody reads), once.
  get edges(): { cursor: string; node: T }[] {
    return this.pageInfo.edgesOf();
  }

  get totalCount(): Promise<number> {
    return this.pageInfo.lazy.totalCount();
  }
}

/**
 * Builds the connection from rows fetched by `keysetSql` (at most size + 1, in scan order), as a
 * window's page value (`page` null, `limit` the window's size).
 */
export function connectionFromRows<T>(
  rows: T[],
  window: PageWindow,
  cursorOf: (row: T) => string,
  lazy: LazyParts,
): PageValue<T> {
  return new RowsConnection(rows, window, cursorOf, lazy);
}

/** A connection over other nodes (`mapConnection`). */
class MappedConnection<T, U> implements ConnectionValue<U> {
  readonly nodes: U[];
  private edgeList: { cursor: string; node: U }[] | undefined = undefined;

  constructor(
    private readonly source: ConnectionValue<T>,
    map: (node: T) => U,
  ) {
    this.nodes = source.nodes.map(map);
  }

  get edges(): { cursor: string; node: U }[] {
    return (this.edgeList ??= this.source.edges.map((e, i) => ({
      cursor: e.cursor,
      node: this.nodes[i],
    })));
  }

  get pageInfo(): ConnectionValue<U>['pageInfo'] {
    return this.source.pageInfo;
  }

  get totalCount(): number | Promise<number> {
    return this.source.totalCount;
  }
}

/** A page value over other nodes (`mapPage`): the connection, with the page's number and size. */
class MappedPage<T, U> extends MappedConnection<T, U> implements PageValue<U> {
  readonly page: number | null;
  readonly limit: number;
  readonly numbered: boolean | undefined;

  constructor(value: PageValue<T>, map: (node: T) => U) {
    super(value, map);
    this.page = value.page;
    this.limit = value.limit;
    this.numbered = value.numbered;
  }
}

/**
 * The same connection over other nodes (`map` of each node), as lazy as the original: edges,
 * cursors and the total are still computed only when selected.
 */
export function mapConnection<T, U>(
  connection: ConnectionValue<T>,
  map: (node: T) => U,
): ConnectionValue<U> {
  return new MappedConnection(connection, map);
}

/**
 * A list's page as its one service method answers it, for REST and GraphQL alike
 * (src/database/page-reader.ts): the connection (nodes, cursors, pageInfo, total) and the REST
 * page's number and size. The resolver returns it as the connection; the controller maps it with
 * `restPageOf`.
 */
export interface PageValue<T> extends ConnectionValue<T> {
  /** The REST page number; null for a page reached by cursor alone, and for a GraphQL window. */
  readonly page: number | null;
  readonly limit: number;
  /** A REST page of a list paged by page number only (the user search): no `next` cursor. */
  readonly numbered?: boolean;
}

/** The same page over other nodes (`mapConnection`), keeping its number and size. */
export function mapPage<T, U>(value: PageValue<T>, map: (node: T) => U): PageValue<U> {
  return new MappedPage(value, map);
}

/**
 * The REST page of a page value: its nodes, `meta` (number, size, total) and `next`, the cursor
 * of its last node when there is a next page (the `Link: rel="next"` token).
 */
export async function restPageOf<T>(value: PageValue<T>): Promise<Page<T>> {
  const [total, more] = await Promise.all([value.totalCount, value.pageInfo.hasNextPage]);
  const meta = { page: value.page, limit: value.limit, total };
  if (value.numbered) {
    return { data: value.nodes, meta };
  }
  return { data: value.nodes, meta, next: more ? value.pageInfo.endCursor : null };
}
