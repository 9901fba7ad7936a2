import type { GqlContext } from '../graphql/context.js';
import { byId } from '../graphql/loaders.js';
import type { Post } from '../domain/post.js';
import type { PostsService } from './posts.service.js';

/** Live posts by id, batched per request. */
export function postLoader(ctx: GqlContext, posts: PostsService) {
  return ctx.loaders.get<string, Post | undefined>('postById', async (ids) =>
    byId(ids, await posts.findByIds(ids)),
  );
}
