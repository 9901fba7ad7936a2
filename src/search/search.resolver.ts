import { Args, Context, createUnionType, Directive, Int, Query, Resolver } from '@nestjs/graphql';
import { BadRequest } from '../common/errors.js';
import { MAX_LIMIT } from '../common/list-query.js';
import type { GqlContext } from '../graphql/context.js';
import { typeNameOf } from '../graphql/node.js';
import type { Post } from '../posts/post.js';
import { PostModel } from '../posts/post.model.js';
import { PostsService } from '../posts/posts.service.js';
import type { User } from '../users/user.js';
import { UserModel } from '../users/user.model.js';
import { UsersService } from '../users/users.service.js';

export const SearchResult = createUnionType({
  name: 'SearchResult',
  description: 'A user (matched by name) or a post (matched by title or body).',
  types: () => [UserModel, PostModel] as const,
  resolveType: (value: { id?: unknown }) => typeNameOf(value),
});

@Resolver()
export class SearchResolver {
  constructor(
    private readonly users: UsersService,
    private readonly posts: PostsService,
  ) {}

  @Directive('@cost(complexity: 10)')
  @Query(() => [SearchResult], {
    description:
      'Case-insensitive substring search over user names and post titles/bodies, newest first.',
  })
  @Directive('@auth(requires: GUEST, scopes: ["users:read", "posts:read"])')
  async search(
    @Context() ctx: GqlContext,
    @Args('term', { description: '1-100 characters.' }) term: string,
    @Args('first', { type: () => Int, defaultValue: 20, description: 'At most 100.' })
    first: number,
  ): Promise<(User | Post)[]> {
    const trimmed = term.trim();
    const details = [];
    if (trimmed.length < 1 || trimmed.length > 100) {
      details.push({ field: 'term', message: 'term must be 1 to 100 characters' });
    }
    if (!Number.isInteger(first) || first < 0 || first > MAX_LIMIT) {
      details.push({ field: 'first', message: `first must be an integer from 0 to ${MAX_LIMIT}` });
    }
    if (details.length > 0) {
      throw BadRequest('Invalid search arguments', details);
    }
    const [users, posts] = await Promise.all([
      this.users.search(ctx.caller, trimmed, first),
      this.posts.search(ctx.caller, trimmed, first),
    ]);
    return [...users, ...posts]
      .sort((a, b) =>
        a.createdAt === b.createdAt ? (a.id < b.id ? 1 : -1) : a.createdAt < b.createdAt ? 1 : -1,
      )
      .slice(0, first);
  }
}
