import { Injectable } from '@nestjs/common';
import { isAdmin, type Caller, type MaybeCaller } from '../identity/caller.js';
import { Role } from '../identity/role.js';
import { BadRequest, Forbidden, Unauthorized } from '../common/errors.js';
import {
  parseListQuery,
  type ListQuery,
  type ListSpec,
  type PageArgs,
} from '../common/list-query.js';
import { encodeCursor, pageWindow } from '../database/paging.js';
import { connectionFromRows, mapConnection, type PageValue } from '../database/connection-value.js';
import { MAX_SEARCH_WORDS } from '../database/search-query.js';
import type { User } from '../domain/user.js';
import { userFromRow, type UserRow } from './users.row.js';
import { searchTokens, UsersRepository, type SearchToken } from './users.repository.js';

/** The users list's sort columns (as in UsersService). */
const SORT_COLUMNS = { created_at: 'created_at', updated_at: 'updated_at', name: 'name' };

/** Cursor key of `users(query:)` pages: the position is the row's offset in the search's order. */
const SEARCH_KEY = 'users:search';

/** The users export: the list's sort, `role` filter and search `q` (no paging). */
export const USER_EXPORT_SPEC: ListSpec<'role'> = {
  sortFields: ['created_at', 'updated_at', 'name'],
  defaultSort: [{ field: 'created_at', desc: false }],
  filters: { role: [Role.ADMIN, Role.USER, Role.GUEST] },
  parameters: {
    q: {
      description:
        'As on the list: every word must be the start of a word of the name, or (first-party ADMINs, and tokens with the `email` scope) the start of the email; case-insensitive. Every match, newest first (no `sort` with `q`). Empty -> 400.',
      schema: { type: 'string', minLength: 1, maxLength: 200 },
    },
  },
};

/** Rows per read of a search export (offset pages of the list's search, newest first). */
const SEARCH_EXPORT_BATCH = 500;

/**
 * The user search (`?q=`, `users(query:)`) and the users export (docs/admin.md): who may match on
 * email and who may export. SQL in UsersRepository.
 */
@Injectable()
export class UserSearchService {
  constructor(private readonly users: UsersRepository) {}

  /**
   * The user search, REST `?q=` and GraphQL `users(query:)` alike (docs/admin.md "User search"):
   * the matches of `q`, newest first. A REST page is numbered (`page`/`limit`, no `sort` or
   * `cursor`); a GraphQL window is `first`/`after`, its cursors the offset of a match
   * (`users:search`).
   */
  async page(
    caller: MaybeCaller,
    q: unknown,
    role: Role | undefined,
    request: { query: ListQuery; rest: Record<string, unknown> } | { window: PageArgs },
  ): Promise<PageValue<User>> {
    if ('query' in request) {
      requireCaller(caller);
      return this.restPage(caller, request.rest, request.query);
    }
    return this.windowPage(caller, q, role, request.window);
  }

  private async restPage(
    caller: Caller,
    rawQuery: Record<string, unknown>,
    query: ListQuery,
  ): Promise<PageValue<User>> {
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
    const nodes = rows.map(userFromRow);
    return {
      edges: [],
      nodes,
      pageInfo: {
        hasNextPage: query.page * query.limit < total,
        hasPreviousPage: query.page > 1,
        startCursor: null,
        endCursor: null,
      },
      totalCount: total,
      page: query.page,
      limit: query.limit,
      numbered: true,
    };
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
    if (rawQuery.q !== undefined) {
      return this.searchExport(caller, rawQuery, query.filters.role);
    }
    return this.users.scanForExport(query.filters.role, query.sort, SORT_COLUMNS);
  }

  /**
   * `export?q=`: what the list's search matches (the same words, the same email rule), every match
   * newest first, read page by page as the list would.
   */
  private searchExport(
    caller: Caller,
    rawQuery: Record<string, unknown>,
    role: string | undefined,
  ): AsyncIterable<UserRow[]> {
    const tokens = searchQueryTokens(rawQuery.q, 'q');
    if (rawQuery.sort !== undefined) {
      throw BadRequest('Invalid query parameters', [
        { field: 'sort', message: 'a search (q) is exported newest first' },
      ]);
    }
    const emails = mayMatchEmails(caller);
    const users = this.users;
    return (async function* () {
      for (let offset = 0; ; offset += SEARCH_EXPORT_BATCH) {
        const { rows } = await users.searchPage(tokens, emails, role, SEARCH_EXPORT_BATCH, offset);
        if (rows.length > 0) {
          yield rows;
        }
        if (rows.length < SEARCH_EXPORT_BATCH) {
          return;
        }
      }
    })();
  }

  /** GraphQL `users(query:)`: the first `first` matches after `after`, and their number. */
  private async windowPage(
    caller: MaybeCaller,
    q: unknown,
    role: Role | undefined,
    args: PageArgs,
  ): Promise<PageValue<User>> {
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
    return Object.assign(
      mapConnection(connection, (r) => r.user),
      {
        page: null,
        limit: window.size,
      },
    );
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
