import { Args, Context, Int, Parent, ResolveField, Resolver } from '@nestjs/graphql';
import type { ConnectionValue } from '../database/connection-value.js';
import type { GqlContext } from '../graphql/context.js';
import { PlainResolvers } from '../graphql/plain-resolvers.js';
import type { User } from '../domain/user.js';
import { UserModel } from '../users/user.model.js';
import type { Post } from '../domain/post.js';
import { PostConnection } from './post.model.js';
import { PostsService } from './posts.service.js';

/**
 * `User.posts(first, after)`: a connection per user, batched. A page of 20 users asking for their
 * posts makes ONE call of PostsService.postsOfAuthors, which runs one statement for all the pages
 * (window function), one for all the totalCounts and, with `after`, one for all the
 * hasPreviousPage checks: constant in the page size. The resolver only batches.
 */
@Resolver(() => UserModel)
export class UserPostsResolver {
  constructor(
    private readonly service: PostsService,
    plain: PlainResolvers,
  ) {
    // 20 times in a page of 20 users: without Nest's per-call pipeline (plain-resolvers.ts)
    plain.register('User', 'posts', (user, args, ctx) =>
      this.posts(user as User, ctx, args.first as number | null, args.after as string | null),
    );
  }

  @ResolveField('posts', () => PostConnection, { description: "The user's posts, oldest first." })
  async posts(
    @Parent() user: User,
    @Context() ctx: GqlContext,
    @Args('first', { type: () => Int, nullable: true, description: 'Default 20, at most 100.' })
    first?: number | null,
    @Args('after', { type: () => String, nullable: true }) after?: string | null,
  ): Promise<ConnectionValue<Post>> {
    const pages = ctx.loaders.get<string, ConnectionValue<Post>>(
      `postsOfAuthors:${first ?? ''}:${after ?? ''}`,
      (ids) => this.service.postsOfAuthors(ctx.caller, ids, { first, after }),
    );
    return pages.load(user.id);
  }
}
