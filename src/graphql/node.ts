import { Field, ID, InterfaceType } from '@nestjs/graphql';
import { Injectable } from '@nestjs/common';
import { ID_PREFIXES, kindOf, type IdKind } from '../common/ids.js';
import type { GqlContext } from './context.js';

/** GraphQL type name per id kind (ids carry their type: docs/contract.md section 3). */
const TYPE_OF_KIND = new Map<IdKind, string>();

/** Resolves the concrete type of any value with a prefixed `id` (Node interface, unions). */
export function typeNameOf(value: { id?: unknown }): string | undefined {
  const kind = typeof value?.id === 'string' ? kindOf(value.id) : undefined;
  return kind ? TYPE_OF_KIND.get(kind) : undefined;
}

@InterfaceType('Node', {
  description:
    'An object with a globally unique, prefixed id (usr_, adm_, pst_, ord_, rom_, msg_ + ULID).',
  resolveType: (value: { id?: unknown }) => typeNameOf(value),
})
export abstract class Node {
  @Field(() => ID)
  id!: string;
}

export type NodeFetcher = (ctx: GqlContext, id: string) => Promise<object | undefined | null>;

/**
 * `node(id:)` dispatch. Each resource registers its kind once (in its resolver's constructor):
 *
 *   nodes.register('order', 'Order', (ctx, id) => orderLoader(ctx).load(id));
 *
 * The fetcher must apply the same read rules as the type's own root field.
 */
@Injectable()
export class NodeRegistry {
  private readonly fetchers = new Map<IdKind, NodeFetcher>();

  register(kind: IdKind, typeName: string, fetch: NodeFetcher): void {
    if (!(kind in ID_PREFIXES)) {
      throw new Error(`unknown id kind ${kind}`);
    }
    TYPE_OF_KIND.set(kind, typeName);
    this.fetchers.set(kind, fetch);
  }

  async fetch(ctx: GqlContext, id: string): Promise<object | undefined> {
    const kind = kindOf(id);
    const fetcher = kind ? this.fetchers.get(kind) : undefined;
    return fetcher ? ((await fetcher(ctx, id)) ?? undefined) : undefined;
  }
}
