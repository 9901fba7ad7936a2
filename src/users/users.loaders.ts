import type { GqlContext } from '../graphql/context.js';
import { byId } from '../graphql/loaders.js';
import type { User } from '../domain/user.js';
import type { UsersService } from './users.service.js';

/** Live users by id, batched per request: one `IN (...)` statement per tick. */
export function userLoader(ctx: GqlContext, users: UsersService) {
  return ctx.loaders.get<string, User | undefined>('userById', async (ids) =>
    byId(ids, await users.findByIds(ids)),
  );
}
