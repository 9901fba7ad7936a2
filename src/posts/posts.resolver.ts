import {
  Args,
  Context,
  Directive,
  ID,
  Int,
  Mutation,
  Query,
  ResolveField,
  Resolver,
} from '@nestjs/graphql';
import type { GqlContext } from '../graphql/context.js';
import { NodeRegistry } from '../graphql/node.js';
import { DateTimeScalar } from '../graphql/scalars/date-time.scalar.js';
import type { User } from '../domain/user.js';
import { UserModel } from '../users/user.model.js';
import { userLoader } from '../users/users.loaders.js';
import { UsersService } from '../users/users.service.js';
import { CreatePostInput, PatchPostInput } from './dto/post.inputs.js';
import type { Post } from '../domain/post.js';
import { PostModel } from './post.model.js';
import { postLoader } from './posts.loaders.js';
import { PostsService } from './posts.service.js';

/** GraphQL side of the posts resource; the rules live in PostsService. */
@Resolver(() => PostModel)
export class PostsResolver {
  constructor(
    private readonly posts: PostsService,
    private readonly users: UsersService,
    nodes: NodeRegistry,
  ) {
    // through the request's loader: several node() fields of one request read their posts at once
    nodes.register('post', 'Post', (ctx, id) =>
      this.posts.get(ctx.caller, id, (one) => postLoader(ctx, this.posts).load(one)),
    );
  }

  @Query(() => PostModel, { nullable: true })
  @Directive('@auth(requires: GUEST, scopes: ["posts:read"])')
  post(@Args('id', { type: () => ID }) id: string, @Context() ctx: GqlContext): Promise<Post> {
    return this.posts.get(ctx.caller, id);
  }

  @Query(() => [PostModel], {
    name: 'posts',
    description:
      'Posts, oldest first: a plain list of at most 100. `after` is the id of the last post seen.',
  })
  @Directive('@auth(requires: GUEST, scopes: ["posts:read"])')
  feed(
    @Context() ctx: GqlContext,
    @Args('first', { type: () => Int, defaultValue: 20 }) first: number,
    @Args('after', { type: () => String, nullable: true }) after?: string | null,
    @Args('since', {
      type: () => DateTimeScalar,
      nullable: true,
      description: 'Only posts created at or after.',
    })
    since?: string | null,
  ): Promise<Post[]> {
    return this.posts.feed(ctx.caller, {
      first,
      after: after ?? undefined,
      since: since ?? undefined,
    });
  }

  @ResolveField('author', () => UserModel, {
    nullable: true,
    description: 'null once the author has been deleted.',
  })
  async author(post: Post, _args: unknown, ctx: GqlContext): Promise<User | null> {
    return (await userLoader(ctx, this.users).load(post.authorId)) ?? null;
  }

  @Mutation(() => PostModel, {
    nullable: true,
    description: 'A post by the caller (USER or ADMIN).',
  })
  @Directive('@auth(requires: USER, scopes: ["posts:write"])')
  async createPost(
    @Context() ctx: GqlContext,
    @Args('input') input: CreatePostInput,
  ): Promise<Post> {
    return this.posts.create(ctx.caller, input);
  }

  @Mutation(() => PostModel, { nullable: true, description: 'Own posts, or any as ADMIN.' })
  @Directive('@auth(requires: USER, scopes: ["posts:write"])')
  async updatePost(
    @Context() ctx: GqlContext,
    @Args('id', { type: () => ID }) id: string,
    @Args('input') input: PatchPostInput,
  ): Promise<Post> {
    return this.posts.update(ctx.caller, id, input); // validated (and trimmed) by the global pipe
  }

  @Mutation(() => PostModel, {
    nullable: true,
    description:
      'Soft delete. Returns the deleted post; null when it was already deleted (idempotent).',
  })
  @Directive('@auth(requires: USER, scopes: ["posts:write"])')
  async deletePost(
    @Context() ctx: GqlContext,
    @Args('id', { type: () => ID }) id: string,
  ): Promise<Post | null> {
    return (await this.posts.remove(ctx.caller, id)) ?? null;
  }
}
