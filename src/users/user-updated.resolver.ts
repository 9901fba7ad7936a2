import { Args, Context, Directive, ID, Resolver, Subscription } from '@nestjs/graphql';
import type { GqlContext } from '../graphql/context.js';
import type { User } from '../domain/user.js';
import { UserModel } from './user.model.js';
import { canSeeEmail } from './users.mapper.js';
import { UsersService } from './users.service.js';
import { EventsService } from '../events/events.service.js';

/**
 * `userUpdated(id)`: every committed change of that user (REST PUT/PATCH/batch, GraphQL updateUser).
 * The payload is a `User` resolved through the type's own field resolvers with the subscriber's
 * context; email visibility is applied here as well, so a payload never carries an email its
 * subscriber may not see even before field resolution.
 */
@Resolver(() => UserModel)
export class UserUpdatedResolver {
  constructor(
    private readonly users: UsersService,
    private readonly events: EventsService,
  ) {}

  @Subscription(() => UserModel, {
    description:
      'Changes of the user with this id, in commit order. NOT_FOUND for an unknown user.',
    resolve: (user: User, _args: unknown, ctx: GqlContext): User =>
      canSeeEmail(user, ctx.caller) ? user : { ...user, email: null },
  })
  @Directive('@auth(requires: GUEST, scopes: ["users:read"])')
  async userUpdated(
    @Args('id', { type: () => ID }) id: string,
    @Context() ctx: GqlContext,
  ): Promise<AsyncIterableIterator<User>> {
    await this.users.get(ctx.caller as NonNullable<GqlContext['caller']>, id);
    return this.events.userUpdates(id);
  }
}
