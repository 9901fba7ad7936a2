import { Args, Context, Directive, ID, Query, Resolver } from '@nestjs/graphql';
import { NotFound } from '../common/errors.js';
import type { GqlContext } from './context.js';
import { Node, NodeRegistry } from './node.js';

@Resolver()
export class NodeResolver {
  constructor(private readonly nodes: NodeRegistry) {}

  @Query(() => Node, {
    nullable: true,
    description: 'Any object by its id; the id prefix names its type.',
  })
  @Directive('@auth(requires: GUEST, scopes: [])')
  async node(
    @Args('id', { type: () => ID }) id: string,
    @Context() ctx: GqlContext,
  ): Promise<object> {
    const found = await this.nodes.fetch(ctx, id);
    if (!found) {
      throw NotFound('Node');
    }
    return found;
  }
}
