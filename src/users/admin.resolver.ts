import { ResolveField, Resolver } from '@nestjs/graphql';
import { NotFound } from '../common/errors.js';
import type { GqlContext } from '../graphql/context.js';
import { NodeRegistry } from '../graphql/node.js';
import type { User } from '../domain/user.js';
import { AdminModel, UserModel } from './user.model.js';
import { userLoader } from './users.loaders.js';
import { toAdminModel, userIdOfAdmin } from './users.mapper.js';
import { UsersService } from './users.service.js';

/** `Admin` as a `Node` (`node(id: "adm_…")`, ADMIN only) and its link to the `User` it is. */
@Resolver(() => AdminModel)
export class AdminResolver {
  constructor(
    private readonly users: UsersService,
    nodes: NodeRegistry,
  ) {
    nodes.register('admin', 'Admin', async (ctx, id) =>
      toAdminModel(await this.users.admin(ctx.caller, userIdOfAdmin(id))),
    );
  }

  @ResolveField('user', () => UserModel, { description: 'The user account of this administrator.' })
  async user(admin: AdminModel, _args: unknown, ctx: GqlContext): Promise<User> {
    const user = await userLoader(ctx, this.users).load(admin.userId);
    if (!user) {
      throw NotFound('User');
    }
    return user;
  }
}
