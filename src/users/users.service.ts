import { Injectable } from '@nestjs/common';
import type { Caller, MaybeCaller } from '../identity/caller.js';
import { Role } from '../identity/role.js';
import { NotFound } from '../common/errors.js';
import { isId } from '../common/ids.js';
import { parseListQuery, type ListSpec, type PageRequest } from '../common/list-query.js';
import { CountersRepository, CountKeys } from '../database/counters.repository.js';
import type { PageValue } from '../database/connection-value.js';
import { UserSearchService } from './user-search.service.js';
import type { User } from '../domain/user.js';
import { UsersRepository } from './users.repository.js';
import { requireAdmin, requireRead } from './user-rights.js';

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

  /**
   * The users list, REST and GraphQL alike (docs/lists.md, "Paging module"): live users, of `role`
   * when given, or the matches of a search `q`. A REST request carries the query parameters (page
   * number or keyset `cursor`, `sort`, `role`, `q`); a GraphQL window its connection arguments and
   * one sort term, with `role` and `q` beside it. The total comes from the counters (O(1)); a
   * window reads it, and hasPreviousPage, only when selected.
   */
  async page(
    caller: MaybeCaller,
    request: PageRequest,
    filter: { role?: Role; q?: unknown } = {},
  ): Promise<PageValue<User>> {
    if ('rest' in request) {
      requireRead(caller);
      const query = parseListQuery(request.rest, USER_LIST_SPEC);
      const role = query.filters.role as Role | undefined;
      if (request.rest.q !== undefined) {
        return this.userSearch.page(caller, request.rest.q, role, { query, rest: request.rest });
      }
      return this.users.page(role, { query }, () => this.total(role));
    }
    if (filter.q !== undefined) {
      return this.userSearch.page(caller, filter.q, filter.role, {
        window: request.window,
      });
    }
    requireRead(caller);
    const { role } = filter;
    return this.users.page(role, request, () => this.total(role));
  }

  private total(role: Role | undefined): Promise<number> {
    return this.counters.get(role ? CountKeys.usersByRole(role) : CountKeys.users());
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
