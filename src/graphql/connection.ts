import type { Type } from '@nestjs/common';
import { Directive, Extensions, Field, Int, ObjectType, registerEnumType } from '@nestjs/graphql';
import { MAY_BE_PROMISE } from './data-fields.js';

/**
 * Relay connection types (https://relay.dev/graphql/connections.htm). Their values (cursors, keyset
 * windows, `ConnectionValue`) are built below the resolvers by the paging module,
 * src/database/paging.ts.
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
  // both may be a promise: the extra statement runs only when selected (connection-value.ts)
  @Field()
  @Extensions({ [MAY_BE_PROMISE]: true })
  hasNextPage!: boolean;

  @Field()
  @Extensions({ [MAY_BE_PROMISE]: true })
  hasPreviousPage!: boolean;

  @Field(() => String, { nullable: true })
  startCursor!: string | null;

  @Field(() => String, { nullable: true })
  endCursor!: string | null;
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

    // may be a promise: the counters are read only when selected (connection-value.ts)
    @Field(() => Int, { description: 'Items matching the filters, across all pages.' })
    @Extensions({ [MAY_BE_PROMISE]: true })
    totalCount!: number;
  }
  return ConnectionType;
}
