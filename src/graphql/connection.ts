import type { Type } from '@nestjs/common';
import { Directive, Field, Int, ObjectType, registerEnumType } from '@nestjs/graphql';
import type { PageWindow } from '../database/paging.js';

/**
 * Relay connections (https://relay.dev/graphql/connections.htm); their cursors and keyset windows
 * are the paging module's (src/database/paging.ts).
 */

export enum OrderDirection {
  ASC = 'ASC',
  DESC = 'DESC',
}
registerEnumType(OrderDirection, { name: 'OrderDirection' });

@ObjectType('PageInfo')
@Directive('@auth(scopes: [])')
@Directive('@cacheControl(inheritMaxAge: true)')
export class PageInfo {
  @Field()
  hasNextPage!: boolean;

  @Field()
  hasPreviousPage!: boolean;

  @Field(() => String, { nullable: true })
  startCursor!: string | null;

  @Field(() => String, { nullable: true })
  endCursor!: string | null;
}

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

/**
 * Connection and edge types for a node type:
 *   @ObjectType('UserConnection') export class UserConnection extends Connection(User) {}
 * The edge type is named `<Node>Edge` and inherits the connection's cache hint; give the concrete
 * connection class its own `@Directive('@cacheControl(maxAge: N)')` (or `inheritMaxAge: true`) and
 * its `@Directive('@auth(scopes: [...])')` (the edge needs no scope of its own: it is reached only
 * through its connection, and its `node` is checked as the node type).
 */
export function Connection<T>(nodeType: Type<T>, nodeName = nodeType.name) {
  @ObjectType(`${nodeName}Edge`)
  @Directive('@auth(scopes: [])')
  @Directive('@cacheControl(inheritMaxAge: true)')
  class Edge {
    @Field()
    cursor!: string;

    @Field(() => nodeType)
    node!: T;
  }

  // no cache hint here: the concrete XConnection states its own (a directive may appear only once)
  @ObjectType({ isAbstract: true })
  abstract class ConnectionType {
    @Field(() => [Edge])
    edges!: Edge[];

    @Field(() => [nodeType], {
      description: 'The nodes of `edges`, for clients that need no cursors.',
    })
    nodes!: T[];

    @Field(() => PageInfo)
    pageInfo!: PageInfo;

    @Field(() => Int, { description: 'Items matching the filters, across all pages.' })
    totalCount!: number;
  }
  return ConnectionType;
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
