import { Args, Context, Int, Parent, ResolveField, Resolver } from '@nestjs/graphql';
import { encodeCursor, pageWindow, type PageWindow } from '../database/paging.js';
import { connectionFromRows, type ConnectionValue } from '../database/connection-value.js';
import type { GqlContext } from '../graphql/context.js';
import { PlainResolvers } from '../graphql/plain-resolvers.js';
import { groupBy } from '../graphql/loaders.js';
import type { User } from '../users/user.js';
import { UserModel } from '../users/user.model.js';
import type { Post } from './post.js';
import { PostConnection } from './post.model.js';
import { PostsService } from './posts.service.js';

const ORDER_KEY = 'posts:created_at';
const cursorOf = (p: Post) => encodeCursor(ORDER_KEY, [p.createdAt], p.id);

/**
 * `User.posts(first, after)`: a connection per user, batched. A page of 20 users asking for their
 * posts runs one statement for all the pages (window function), one for all the totalCounts and,
 * with `after`, one for all the hasPreviousPage checks: constant in the page size.
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
    const window = pageWindow({ first, after }, ORDER_KEY);
    const pages = ctx.loaders.get<string, Post[]>(
      `postsByAuthor:${window.size}:${after ?? ''}`,
      async (ids) =>
        groupBy(ids, await this.service.pageByAuthors(ctx.caller, ids, window), (p) => p.authorId),
    );
    const rows = await pages.load(user.id);
    return connectionFromRows(rows, window, cursorOf, {
      totalCount: () => this.countLoader(ctx).load(user.id),
      existsBeyond: () => this.earlierLoader(ctx, window).load(user.id),
    });
  }

  private countLoader(ctx: GqlContext) {
    return ctx.loaders.get<string, number>('postCountByAuthor', async (ids) => {
      const counts = await this.service.countByAuthors(ctx.caller, ids);
      return ids.map((id) => counts.get(id) ?? 0);
    });
  }

  private earlierLoader(ctx: GqlContext, window: PageWindow) {
    const position = window.after!;
    return ctx.loaders.get<string, boolean>(
      `postsUpTo:${String(position[0])}:${position[1]}`,
      async (ids) => {
        const found = await this.service.authorsWithPostsUpTo(ctx.caller, ids, position);
        return ids.map((id) => found.has(id));
      },
    );
  }
}
