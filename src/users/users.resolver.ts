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
import type { Caller } from '../identity/caller.js';
import { Role } from '../identity/role.js';
import { BadRequest } from '../common/errors.js';
import { validateInput } from '../common/validation.js';
import { OrderDirection } from '../graphql/connection.js';
import type { PageArgs } from '../common/list-query.js';
import type { ConnectionValue } from '../database/connection-value.js';
import type { GqlContext } from '../graphql/context.js';
import { NodeRegistry } from '../graphql/node.js';
import { PlainResolvers } from '../graphql/plain-resolvers.js';
import { CreateUserShortInput } from './dto/create-user-short.input.js';
import { CreateUserInput, PatchUserInput } from './dto/user.inputs.js';
import type { User } from '../domain/user.js';
import { AdminModel, UserConnection, UserModel, UserOrder, UserOrderField } from './user.model.js';
import { userLoader } from './users.loaders.js';
import { canSeeEmail, toAdminModel } from './users.mapper.js';
import { UsersService } from './users.service.js';
import { UserAccountsService } from './user-accounts.service.js';
import { UserBatchService } from './user-batch.service.js';

/**
 * `updateUser(id, name:)`, deprecated since 2026-11-29 (docs/changes.md): the same change as
 * `input: { name }`, which is the one form that takes every field.
 */
const SHORT_UPDATE =
  'Use `input: { name }` (UpdateUserInput): the same change, in the form that takes every field.';

/** The service's sort field of a `UserOrderField`. */
function sortFieldOf(field: UserOrderField): string {
  switch (field) {
    case UserOrderField.CREATED_AT:
      return 'created_at';
    case UserOrderField.UPDATED_AT:
      return 'updated_at';
    case UserOrderField.NAME:
      return 'name';
  }
}

/** Only authenticated callers get past the operation policy; this narrows the type for services. */
function callerOf(ctx: GqlContext): Caller {
  return ctx.caller as Caller;
}

/**
 * GraphQL side of the users resource: thin, every rule lives in the services REST uses too (UsersService,
 * UserAccountsService, UserBatchService; CONTRIBUTING.md, house style 1).
 */
@Resolver(() => UserModel)
export class UsersResolver {
  constructor(
    private readonly service: UsersService,
    private readonly accounts: UserAccountsService,
    private readonly batches: UserBatchService,
    nodes: NodeRegistry,
    plain: PlainResolvers,
  ) {
    nodes.register('user', 'User', (ctx, id) => this.service.get(callerOf(ctx), id));
    // the hottest root field: without Nest's per-call pipeline (plain-resolvers.ts)
    plain.register('Query', 'user', (_root, args, ctx) => this.user(args.id as string, ctx));
    // the page of users: its arguments are scalars, enums and UserOrder (enums only)
    plain.register('Query', 'users', (_root, args, ctx) =>
      this.users(
        ctx,
        args.first as number | null | undefined,
        args.after as string | null | undefined,
        args.last as number | null | undefined,
        args.before as string | null | undefined,
        args.role as Role | null | undefined,
        args.orderBy as UserOrder | null | undefined,
        args.query as string | null | undefined,
      ),
    );
  }

  @Query(() => UserModel, { nullable: true })
  @Directive('@auth(requires: GUEST, scopes: ["users:read"])')
  user(@Args('id', { type: () => ID }) id: string, @Context() ctx: GqlContext): Promise<User> {
    return this.service.get(callerOf(ctx), id);
  }

  @Query(() => UserModel, { description: 'The caller.' })
  @Directive('@cacheControl(maxAge: 0, scope: PRIVATE)')
  @Directive('@auth(requires: GUEST, scopes: ["users:read"])')
  me(@Context() ctx: GqlContext): Promise<User> {
    const caller = callerOf(ctx);
    return this.service.get(caller, caller.userId);
  }

  @Query(() => UserConnection, {
    description: 'Users, paged with cursors (first/after forwards, last/before backwards).',
  })
  @Directive('@auth(requires: GUEST, scopes: ["users:read"])')
  async users(
    @Context() ctx: GqlContext,
    @Args('first', { type: () => Int, nullable: true, description: 'Default 20, at most 100.' })
    first?: number | null,
    @Args('after', { type: () => String, nullable: true }) after?: string | null,
    @Args('last', { type: () => Int, nullable: true, description: 'At most 100.' })
    last?: number | null,
    @Args('before', { type: () => String, nullable: true }) before?: string | null,
    @Args('role', { type: () => Role, nullable: true }) role?: Role | null,
    @Args('orderBy', { type: () => UserOrder, nullable: true }) orderBy?: UserOrder | null,
    @Args('query', {
      type: () => String,
      nullable: true,
      description:
        'Search: every word starts a word of the name, or (ADMIN callers) the email. Newest first; only with first/after and role.',
    })
    query?: string | null,
  ): Promise<ConnectionValue<User>> {
    const caller = callerOf(ctx);
    if (query !== undefined && query !== null) {
      return this.search(ctx, query, { first, after, last, before, role, orderBy });
    }
    const connection = await this.service.page(
      caller,
      {
        window: { first, after, last, before },
        sort: {
          field: sortFieldOf(orderBy?.field ?? UserOrderField.CREATED_AT),
          desc: orderBy?.direction === OrderDirection.DESC,
        },
      },
      { role: role ?? undefined },
    );
    const loader = userLoader(ctx, this.service);
    for (const u of connection.nodes) {
      loader.prime(u.id, u);
    }
    return connection;
  }

  /** `users(query:)`: search pages, by an offset cursor (the search's order is newest first). */
  private async search(
    ctx: GqlContext,
    query: string,
    args: PageArgs & { role?: Role | null; orderBy?: UserOrder | null },
  ): Promise<ConnectionValue<User>> {
    const extra = (['last', 'before', 'orderBy'] as const).find(
      (k) => args[k] !== undefined && args[k] !== null,
    );
    if (extra) {
      throw BadRequest('Invalid arguments', [
        {
          field: extra,
          message: `${extra} cannot be combined with query (newest first, first/after)`,
        },
      ]);
    }
    return this.service.page(
      ctx.caller,
      {
        window: { first: args.first, after: args.after },
        sort: { field: 'created_at', desc: true },
      },
      { role: args.role ?? undefined, q: query },
    );
  }

  @Query(() => [AdminModel], { nullable: true, description: 'Administrators (ADMIN only).' })
  @Directive('@auth(requires: ADMIN, scopes: ["users:read"])')
  async admins(@Context() ctx: GqlContext): Promise<AdminModel[]> {
    const admins = await this.service.byRole(callerOf(ctx), Role.ADMIN);
    return admins.map(toAdminModel);
  }

  // no parameter decorators: @nestjs/graphql calls it as a plain graphql-js resolver (see docs/graphql.md)
  @ResolveField('email')
  email(user: User, _args: unknown, ctx: GqlContext): string | null {
    return canSeeEmail(user, ctx.caller) ? user.email : null;
  }

  // ---- mutations ---------------------------------------------------------------------------

  @Mutation(() => UserModel, {
    nullable: true,
    description:
      'Either `input` or the short form `name` (+ optional `email`), never both (ADMIN only).',
  })
  @Directive('@auth(requires: ADMIN, scopes: ["users:write"])')
  async createUser(
    @Context() ctx: GqlContext,
    @Args('input', { type: () => CreateUserInput, nullable: true }) input?: CreateUserInput | null,
    @Args('name', { type: () => String, nullable: true }) name?: string | null,
    @Args('email', { type: () => String, nullable: true }) email?: string | null,
  ): Promise<User> {
    const short = (name ?? null) !== null || (email ?? null) !== null;
    if (short === Boolean(input)) {
      throw BadRequest(
        'Use exactly one form: createUser(input: ...) or createUser(name: ..., email: ...)',
        [{ field: 'input', message: 'give either input or name (and optionally email)' }],
      );
    }
    const data = input
      ? await validateInput(CreateUserInput, { ...input })
      : ((await validateInput(CreateUserShortInput, {
          name: name ?? undefined,
          ...(email ? { email } : {}),
        })) as CreateUserInput);
    return this.accounts.create(callerOf(ctx), data);
  }

  @Mutation(() => UserModel, {
    nullable: true,
    description: 'Either `name` or `input`, never both.',
  })
  @Directive('@auth(requires: USER, scopes: ["users:write"])')
  async updateUser(
    @Context() ctx: GqlContext,
    @Args('id', { type: () => ID }) id: string,
    @Args('name', { type: () => String, nullable: true, deprecationReason: SHORT_UPDATE })
    name?: string | null,
    @Args('input', { type: () => PatchUserInput, nullable: true }) input?: PatchUserInput | null,
  ): Promise<User> {
    if (((name ?? null) !== null) === Boolean(input)) {
      throw BadRequest(
        'Use exactly one form: updateUser(id, name: ...) or updateUser(id, input: ...)',
        [{ field: 'input', message: 'give either name or input' }],
      );
    }
    const patch = await validateInput(PatchUserInput, input ? { ...input } : { name });
    return this.accounts.update(callerOf(ctx), id, patch);
  }

  @Mutation(() => UserModel, {
    nullable: true,
    description:
      'Soft delete. Returns the deleted user; null when it was already deleted (idempotent).',
  })
  @Directive('@auth(requires: USER, scopes: ["users:write"])')
  async deleteUser(
    @Context() ctx: GqlContext,
    @Args('id', { type: () => ID }) id: string,
  ): Promise<User | null> {
    return (await this.accounts.remove(callerOf(ctx), id)) ?? null;
  }

  @Mutation(() => [UserModel], {
    description: 'Creates all users or none (at most 100; ADMIN only).',
  })
  @Directive('@auth(requires: ADMIN, scopes: ["users:write"])')
  async bulkCreate(
    @Context() ctx: GqlContext,
    @Args('input', { type: () => [CreateUserInput] }) input: CreateUserInput[],
  ): Promise<User[]> {
    const results = await this.batches.batch(
      callerOf(ctx),
      input.map((data) => ({ op: 'create', data: { ...data } })),
    );
    return results.map((r) => r.user);
  }
}
