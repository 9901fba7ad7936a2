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

/** Builds the connection from rows fetched by `keysetSql` (at most size + 1, in scan order). */
export function connectionFromRows<T>(
  rows: T[],
  window: PageWindow,
  cursorOf: (row: T) => string,
  lazy: {
    totalCount: () => Promise<number>;
    /** Is there any row before `after` (forward paging) / after `before` (backward paging)? */
    existsBeyond?: (side: 'before-after' | 'after-before') => Promise<boolean>;
  },
): ConnectionValue<T> {
  const more = rows.length > window.size;
  const page = more ? rows.slice(0, window.size) : rows.slice();
  if (window.backward) {
    page.reverse();
  }
  // Edges and cursors are built only when selected (a page of 20 users asking for `nodes` of 5 posts
  // each would otherwise encode 120 cursors nobody reads), once.
  let edges: { cursor: string; node: T }[] | undefined;
  const edgesOf = () => (edges ??= page.map((node) => ({ cursor: cursorOf(node), node })));
  const beyond = (
    given: unknown,
    side: 'before-after' | 'after-before',
  ): Promise<boolean> | boolean => (given && lazy.existsBeyond ? lazy.existsBeyond(side) : false);
  // Getters: the extra statements run only when the client selects these fields.
  const pageInfo = {
    get hasNextPage() {
      return window.backward ? beyond(window.before, 'after-before') : more;
    },
    get hasPreviousPage() {
      return window.backward ? more : beyond(window.after, 'before-after');
    },
    get startCursor() {
      return edgesOf()[0]?.cursor ?? null;
    },
    get endCursor() {
      const all = edgesOf();
      return all[all.length - 1]?.cursor ?? null;
    },
  };
  return {
    get edges() {
      return edgesOf();
    },
    nodes: page,
    pageInfo,
    get totalCount() {
      return lazy.totalCount();
    },
  };
}

/**
 * The same connection over other nodes (`map` of each node), as lazy as the original: edges,
 * cursors and the total are still computed only when selected.
 */
export function mapConnection<T, U>(
  connection: ConnectionValue<T>,
  map: (node: T) => U,
): ConnectionValue<U> {
  const nodes = connection.nodes.map(map);
  let edges: { cursor: string; node: U }[] | undefined;
  return {
    get edges() {
      return (edges ??= connection.edges.map((e, i) => ({ cursor: e.cursor, node: nodes[i] })));
    },
    nodes,
    pageInfo: connection.pageInfo,
    get totalCount() {
      return connection.totalCount;
    },
  };
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
  return Object.assign(mapConnection(value, map), {
    page: value.page,
    limit: value.limit,
    numbered: value.numbered,
  });
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
