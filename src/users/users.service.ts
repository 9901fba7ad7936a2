import { Injectable } from '@nestjs/common';
import type { Caller, MaybeCaller } from '../identity/caller.js';
import { Role } from '../identity/role.js';
import { NotFound } from '../common/errors.js';
import { isId } from '../common/ids.js';
import { parseListQuery, type ListSpec, type Page, type PageArgs } from '../common/list-query.js';
import { CountersRepository, CountKeys } from '../database/counters.repository.js';
import { encodeCursor, pageWindow } from '../database/paging.js';
import { connectionFromRows, type ConnectionValue } from '../database/connection-value.js';
import { UserSearchService } from './user-search.service.js';
import type { User } from '../domain/user.js';
import { UsersRepository, type UserOrderField } from './users.repository.js';
import { requireAdmin, requireRead } from './user-rights.js';

/** A users connection (GraphQL `users`): filter, ordering and the paging arguments. */
export interface UserConnectionQuery {
  role?: Role;
  field: UserOrderField;
  desc: boolean;
  args: PageArgs;
}

function orderValue(user: User, field: UserOrderField): string {
  switch (field) {
    case 'created_at':
      return user.createdAt;
    case 'updated_at':
      return user.updatedAt;
    case 'name':
      return user.name;
  }
}

export const USER_LIST_SPEC: ListSpec<'role'> = {
  sortFields: ['created_at', 'updated_at', 'name'],
  defaultSort: [{ field: 'created_at', desc: false }],
  filters: { role: [Role.ADMIN, Role.USER, Role.GUEST] },
  parameters: {
    q: {
      description:
        'Search: every word must be the start of a word of the name, or (ADMIN callers only) the start of the email; case-insensitive. Results newest first, paged by `page`/`limit` (no `sort` or `cursor` with `q`). Empty -> 400.',
      schema: { type: 'string', minLength: 1, maxLength: 200 },
    },
  },
};

/**
 * Reading users (REST and GraphQL alike): one user, the list and its search, the keyset pages of
 * connections, administrators by role. Account changes are UserAccountsService's, the batch
 * UserBatchService's, the last-admin rule and the boot ADMIN AdminRulesService's.
 */
@Injectable()
export class UsersService {
  constructor(
    private readonly counters: CountersRepository,
    private readonly users: UsersRepository,
    private readonly userSearch: UserSearchService,
  ) {}

  /** A live user or undefined (malformed ids are simply unknown). */
  async findById(id: string): Promise<User | undefined> {
    if (!isId('user', id)) {
      return undefined;
    }
    return this.users.findById(id);
  }

  /** Live users by id, in one statement (DataLoader batches land here). */
  async findByIds(ids: readonly string[]): Promise<User[]> {
    const valid = ids.filter((id) => isId('user', id));
    return this.users.findByIds(valid);
  }

  async get(caller: Caller, id: string): Promise<User> {
    requireRead(caller);
    const user = await this.findById(id);
    if (!user) {
      throw NotFound('User');
    }
    return user;
  }

  /** REST list: page number or keyset cursor; the total from the counters (O(1)). */
  async list(caller: Caller, rawQuery: Record<string, unknown>): Promise<Page<User>> {
    requireRead(caller);
    const query = parseListQuery(rawQuery, USER_LIST_SPEC);
    if (rawQuery.q !== undefined) {
      return this.userSearch.searchList(caller, rawQuery, query);
    }
    const role = query.filters.role as Role | undefined;
    return this.users.list(
      query,
      role,
      this.counters.get(role ? CountKeys.usersByRole(role) : CountKeys.users()),
    );
  }

  /**
   * A connection of live users (GraphQL `users`): a keyset page between the cursors of `args`, the
   * total from the counters (O(1)); the total and `hasPreviousPage` are read only when selected.
   */
  async connection(caller: MaybeCaller, q: UserConnectionQuery): Promise<ConnectionValue<User>> {
    const orderKey = `users:${q.field}`;
    const window = pageWindow(q.args, orderKey);
    requireRead(caller);
    const filter = { role: q.role, field: q.field, desc: q.desc };
    const rows = await this.users.page({ ...filter, window });
    return connectionFromRows(
      rows,
      window,
      (u) => encodeCursor(orderKey, [orderValue(u, q.field)], u.id),
      {
        totalCount: () =>
          this.counters.get(q.role ? CountKeys.usersByRole(q.role) : CountKeys.users()),
        existsBeyond: (side) =>
          side === 'before-after'
            ? this.users.existsAround(filter, window.after!, 'upto')
            : this.users.existsAround(filter, window.before!, 'from'),
      },
    );
  }

  /** One administrator by its user id (`node(id: "adm_…")`): ADMIN only, like the `admins` query. */
  async admin(caller: MaybeCaller, userId: string): Promise<User> {
    requireAdmin(caller, 'Only administrators can see administrators');
    const user = await this.findById(userId);
    if (!user || user.role !== Role.ADMIN) {
      throw NotFound('Admin');
    }
    return user;
  }

  /** Live users of a role (the `admins` query). */
  async byRole(caller: MaybeCaller, role: Role, limit = 100): Promise<User[]> {
    requireRead(caller);
    return this.users.byRole(role, limit);
  }

  /** Users whose name words start with every one of `words` (search-query.ts), newest first. */
  async search(caller: MaybeCaller, words: readonly string[], limit: number): Promise<User[]> {
    requireRead(caller);
    return this.users.search(words, limit);
  }
}
