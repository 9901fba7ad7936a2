import { Injectable } from '@nestjs/common';
import { isAdmin, type Caller, type MaybeCaller } from '../identity/caller.js';
import { Role } from '../identity/role.js';
import { BadRequest, Forbidden, Unauthorized } from '../common/errors.js';
import { parseListQuery, type ListQuery, type ListSpec, type Page } from '../common/list-query.js';
import {
  connectionFromRows,
  encodeCursor,
  mapConnection,
  pageWindow,
  type ConnectionValue,
  type PageArgs,
} from '../database/paging.js';
import { MAX_SEARCH_WORDS } from '../database/search-query.js';
import type { User } from './user.js';
import { userFromRow, type UserRow } from './users.row.js';
import { searchTokens, UsersRepository, type SearchToken } from './users.repository.js';

/** The users list's sort columns (as in UsersService). */
const SORT_COLUMNS = { created_at: 'created_at', updated_at: 'updated_at', name: 'name' };

/** Cursor key of `users(query:)` pages: the position is the row's offset in the search's order. */
const SEARCH_KEY = 'users:search';

/** The users export: the list's sort and `role` filter (no search, no paging). */
export const USER_EXPORT_SPEC: ListSpec<'role'> = {
  sortFields: ['created_at', 'updated_at', 'name'],
  defaultSort: [{ field: 'created_at', desc: false }],
  filters: { role: [Role.ADMIN, Role.USER, Role.GUEST] },
};

/**
 * The user search (`?q=`, `users(query:)`) and the users export (docs/admin.md): who may match on
 * email and who may export. SQL in UsersRepository.
 */
@Injectable()
export class UserSearchService {
  constructor(private readonly users: UsersRepository) {}

  /** `?q=`: the user search (UsersRepository), page by page. */
  async searchList(
    caller: Caller,
    rawQuery: Record<string, unknown>,
    query: ListQuery,
  ): Promise<Page<User>> {
    const tokens = searchQueryTokens(rawQuery.q, 'q');
    if (rawQuery.sort !== undefined || query.cursor !== undefined) {
      throw BadRequest('Invalid query parameters', [
        {
          field: rawQuery.sort !== undefined ? 'sort' : 'cursor',
          message: 'a search (q) is ordered newest first and paged by page and limit',
        },
      ]);
    }
    const { rows, total } = await this.users.searchPage(
      tokens,
      mayMatchEmails(caller),
      query.filters.role,
      query.limit,
      (query.page - 1) * query.limit,
    );
    return { data: rows.map(userFromRow), meta: { page: query.page, limit: query.limit, total } };
  }

  /**
   * The users export: ADMIN only; the list's `role` filter and sort, every live user, as database
   * rows in keyset batches (`userFromRow` makes each a user), emptied once their reader is done.
   */
  async exportRows(
    caller: MaybeCaller,
    rawQuery: Record<string, unknown>,
  ): Promise<AsyncIterable<UserRow[]>> {
    requireCaller(caller);
    if (!isAdmin(caller)) {
      throw Forbidden('Only administrators can export');
    }
    const query = parseListQuery(rawQuery, USER_EXPORT_SPEC);
    return this.users.scanForExport(query.filters.role, query.sort, SORT_COLUMNS);
  }

  /** GraphQL `users(query:)`: the first `limit` matches, newest first, and their number. */
  async searchConnection(
    caller: MaybeCaller,
    q: unknown,
    role: Role | undefined,
    args: Pick<PageArgs, 'first' | 'after'>,
  ): Promise<ConnectionValue<User>> {
    const window = pageWindow({ first: args.first, after: args.after }, SEARCH_KEY);
    const offset = window.after ? Number(window.after[0]) : 0;
    if (!Number.isInteger(offset) || offset < 0) {
      throw BadRequest('Invalid cursor in after', [
        { field: 'after', message: 'after is not a cursor of this search' },
      ]);
    }
    requireCaller(caller);
    const tokens = searchQueryTokens(q, 'query');
    const { rows, total } = await this.users.searchPage(
      tokens,
      mayMatchEmails(caller),
      role,
      window.size + 1,
      offset,
    );
    const hits = rows.map((row, i) => ({ user: userFromRow(row), at: offset + i + 1 }));
    const connection = connectionFromRows(
      hits,
      window,
      (r) => encodeCursor(SEARCH_KEY, [r.at], r.user.id),
      { totalCount: () => Promise.resolve(total), existsBeyond: () => Promise.resolve(offset > 0) },
    );
    return mapConnection(connection, (r) => r.user);
  }
}

/**
 * Whether `q` may match on emails (docs/admin.md "User search"): for ADMINs only, and for a partner
 * app's token only with the `email` scope too. A token without it would otherwise learn, from which
 * users match or from `meta.total`, an address it may not read.
 */
function mayMatchEmails(caller: Caller): boolean {
  if (caller.method === 'oauth' && !caller.scopes?.includes('email')) {
    return false;
  }
  return isAdmin(caller);
}

function requireCaller(caller: MaybeCaller): asserts caller is Caller {
  if (!caller) {
    throw Unauthorized();
  }
}

/** A search text as tokens: empty (or only separators) or too many words -> 400 naming `name`. */
function searchQueryTokens(q: unknown, name: string): SearchToken[] {
  const tokens = typeof q === 'string' && q.length <= 200 ? searchTokens(q) : [];
  if (tokens.length === 0 || tokens.length > MAX_SEARCH_WORDS) {
    throw BadRequest('Invalid query parameters', [
      {
        field: name,
        message: `${name} must hold 1 to ${MAX_SEARCH_WORDS} words (at most 200 characters)`,
      },
    ]);
  }
  return tokens;
}
