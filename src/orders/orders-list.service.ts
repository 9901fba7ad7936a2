import { Injectable } from '@nestjs/common';
import { hasRole, isAdmin, type Caller, type MaybeCaller } from '../identity/caller.js';
import { Role } from '../identity/role.js';
import { instantParam, wholeParam } from '../common/admin-filters.js';
import {
  BadRequest,
  DomainError,
  Forbidden,
  Unauthorized,
  type ErrorDetail,
} from '../common/errors.js';
import { isId } from '../common/ids.js';
import {
  parseListQuery,
  type ListQuery,
  type ListSpec,
  type PageRequest,
} from '../common/list-query.js';
import { CountersRepository, CountKeys } from '../database/counters.repository.js';
import { MAX_TOTAL_CENTS } from './dto/order.rules.js';
import { ORDER_STATUSES, type Order } from '../domain/order.js';
import { orderFromRow, type OrderRow } from './orders.row.js';
import { UsersRepository } from '../users/users.repository.js';
import { OrdersRepository, type OrderFilter } from './orders.repository.js';
import { totalRangeKeys } from './order-range-totals.js';
import { countInInterval } from '../database/calendar-counts.js';
import { emptyPage, windowAsQuery } from '../database/page-reader.js';
import { mapPage, type PageValue } from '../database/connection-value.js';
import { createdKey } from '../database/order-range-keys.js';

export type OrderListFilter = 'status';

/** GET /api/v1/orders: sorts, filters and the other parameters (documented by ApiPage). */
export const ORDERS_ALL_LIST_SPEC: ListSpec<OrderListFilter> = {
  sortFields: ['created_at', 'total_cents'],
  defaultSort: [{ field: 'created_at', desc: false }],
  filters: { status: ORDER_STATUSES },
  parameters: {
    user_id: {
      description:
        'Only this user’s orders. A USER may only name themself (403 otherwise); a USER’s list is their own orders anyway.',
      schema: { type: 'string', pattern: '^usr_[0-9A-HJKMNP-TV-Z]{26}$' },
    },
    created_after: {
      description: 'Only orders created strictly after this instant (RFC 3339).',
      schema: { type: 'string', format: 'date-time' },
    },
    created_before: {
      description: 'Only orders created at or before this instant (RFC 3339, inclusive).',
      schema: { type: 'string', format: 'date-time' },
    },
    min_total_cents: {
      description: 'Only orders whose `total_cents` is at least this (inclusive).',
      schema: { type: 'integer', minimum: 0, maximum: MAX_TOTAL_CENTS },
    },
    max_total_cents: {
      description: 'Only orders whose `total_cents` is at most this (inclusive).',
      schema: { type: 'integer', minimum: 0, maximum: MAX_TOTAL_CENTS },
    },
  },
};

/** A checked filter plus what the queries need to know about it. */
export interface ResolvedOrderFilter {
  filter: OrderFilter;
  /** The owner is the caller or a user checked live: no per-row check of the owner. */
  liveOwner: boolean;
  /** No order can match (a user_id of no live user). */
  empty: boolean;
}

/**
 * The orders list across users (docs/admin.md): ADMINs see every order of a live user, USERs their
 * own (naming another user -> 403), GUESTs none (403). REST, GraphQL and the export share these
 * rules.
 */
@Injectable()
export class OrdersListService {
  constructor(
    private readonly orders: OrdersRepository,
    private readonly counters: CountersRepository,
    private readonly users: UsersRepository,
  ) {}

  /** The REST query -> a checked filter and list query (400 naming every bad parameter). */
  parse(rawQuery: Record<string, unknown>): { query: ListQuery; filter: OrderFilter } {
    const details: ErrorDetail[] = [];
    let query: ListQuery;
    try {
      query = parseListQuery(rawQuery, ORDERS_ALL_LIST_SPEC);
    } catch (err) {
      // one 400 naming every bad parameter, the list's own and these
      if (err instanceof DomainError) {
        details.push(...(err.details ?? []));
      }
      query = parseListQuery({}, ORDERS_ALL_LIST_SPEC);
    }
    const filter = this.filterFrom(
      {
        status: query.filters.status,
        userId: rawQuery.user_id,
        createdAfter: instantParam(rawQuery, 'created_after', details),
        createdBefore: instantParam(rawQuery, 'created_before', details),
        minTotalCents: wholeParam(rawQuery, 'min_total_cents', MAX_TOTAL_CENTS, details),
        maxTotalCents: wholeParam(rawQuery, 'max_total_cents', MAX_TOTAL_CENTS, details),
      },
      details,
      'user_id',
    );
    if (details.length > 0) {
      throw BadRequest('Invalid query parameters', details);
    }
    return { query, filter };
  }

  /** Checks a filter's user id (GraphQL passes its input here too). */
  filterFrom(
    input: Omit<OrderFilter, 'userId'> & { userId?: unknown },
    details: ErrorDetail[],
    userIdName: string,
  ): OrderFilter {
    const { userId, ...rest } = input;
    const filter: OrderFilter = { ...rest };
    if (userId !== undefined && userId !== null) {
      if (!isId('user', userId)) {
        details.push({ field: userIdName, message: `${userIdName} must be a user id (usr_…)` });
      } else {
        filter.userId = userId;
      }
    }
    return filter;
  }

  /** Rights, then the filter as the caller may see it. */
  private async resolve(caller: MaybeCaller, filter: OrderFilter): Promise<ResolvedOrderFilter> {
    this.requireOrderRole(caller);
    if (!isAdmin(caller)) {
      if (filter.userId !== undefined && filter.userId !== caller.userId) {
        throw Forbidden('You may only list your own orders');
      }
      return { filter: { ...filter, userId: caller.userId }, liveOwner: true, empty: false };
    }
    if (filter.userId === undefined) {
      return { filter, liveOwner: false, empty: false };
    }
    const owner = await this.users.findById(filter.userId);
    return { filter, liveOwner: true, empty: owner === undefined };
  }

  /**
   * The orders list across users, REST (`GET /api/v1/orders`) and GraphQL (`orders`) alike: rights,
   * the filter as the caller may see it, the page and its total. A REST request carries its query
   * parameters (filters, sort, page or cursor); a GraphQL window its `first`/`after` and one sort
   * term, with the checked `filter` beside it (the cursors are the REST ones).
   */
  async page(
    caller: MaybeCaller,
    request: PageRequest,
    filter: OrderFilter = {},
  ): Promise<PageValue<Order>> {
    this.requireOrderRole(caller);
    const { query, filter: checked } =
      'rest' in request
        ? this.parse(request.rest)
        : { query: windowAsQuery(request.window, request.sort), filter };
    const resolved = await this.resolve(caller, checked);
    const page = resolved.empty
      ? emptyPage<OrderRow>(query)
      : await this.orders.pageAcrossUsers(
          resolved.filter,
          resolved.liveOwner,
          query,
          this.total(resolved),
        );
    return mapPage(page, orderFromRow);
  }

  /**
   * The exact number of matching orders (docs/admin.md "Totals"): one counter read when only
   * `status` and `user_id` filter; the range counters (order-range-keys.ts) when one range, of dates
   * or of totals, filters all users' orders; else a COUNT over the index range of the filters (one
   * user's orders, or a date and a total range at once).
   */
  total(resolved: ResolvedOrderFilter): Promise<number> {
    const { filter, liveOwner, empty } = resolved;
    if (empty) {
      return Promise.resolve(0);
    }
    const dated = filter.createdAfter !== undefined || filter.createdBefore !== undefined;
    const priced = filter.minTotalCents !== undefined || filter.maxTotalCents !== undefined;
    const { status, userId } = filter;
    if ((dated || priced) && (userId !== undefined || (dated && priced))) {
      return this.orders.countAcrossUsers(filter, liveOwner);
    }
    if (dated) {
      return this.createdRangeTotal(filter);
    }
    if (priced) {
      return this.totalRangeTotal(filter);
    }
    if (userId !== undefined) {
      return this.counters.get(
        status ? CountKeys.ordersOfUserByStatus(userId, status) : CountKeys.ordersOfUser(userId),
      );
    }
    return this.counters.get(status ? CountKeys.ordersByStatus(status) : CountKeys.orders());
  }

  /** Orders of all live users created in (after, before] (calendar-counts.ts). */
  private createdRangeTotal(filter: OrderFilter): Promise<number> {
    const { status } = filter;
    return countInInterval(
      {
        all: status ? CountKeys.ordersByStatus(status) : CountKeys.orders(),
        key: createdKey(status),
        counters: (keys) => this.counters.getMany(keys),
        count: (after, upTo) =>
          this.orders.countAcrossUsers({ status, createdAfter: after, createdBefore: upTo }, false),
      },
      filter.createdAfter,
      filter.createdBefore,
    );
  }

  /** Orders of all live users with a total in [min, max]; no max: all orders less those below min. */
  private async totalRangeTotal(filter: OrderFilter): Promise<number> {
    const { status, minTotalCents: lo = 0, maxTotalCents: hi } = filter;
    if (hi !== undefined) {
      return lo > hi ? 0 : this.sum(totalRangeKeys(status, lo, hi));
    }
    const all = status ? CountKeys.ordersByStatus(status) : CountKeys.orders();
    const below = lo > 0 ? totalRangeKeys(status, 0, lo - 1) : [];
    const counts = await this.counters.getMany([all, ...below]);
    return below.reduce((n, key) => n - (counts.get(key) ?? 0), counts.get(all) ?? 0);
  }

  private async sum(keys: string[]): Promise<number> {
    const counts = await this.counters.getMany(keys);
    let n = 0;
    for (const value of counts.values()) {
      n += value;
    }
    return n;
  }

  /**
   * The export's rows: ADMIN only, the list's filters and sort; database rows in keyset batches
   * (`orderFromRow` makes each an order), emptied once their reader is done with them.
   */
  async exportRows(
    caller: MaybeCaller,
    rawQuery: Record<string, unknown>,
  ): Promise<AsyncIterable<OrderRow[]> | Iterable<OrderRow[]>> {
    this.requireAdminCaller(caller);
    const { query, filter } = this.parse(rawQuery);
    const resolved = await this.resolve(caller, filter);
    return resolved.empty
      ? []
      : this.orders.scanAcrossUsers(resolved.filter, resolved.liveOwner, query.sort);
  }

  private requireOrderRole(caller: MaybeCaller): asserts caller is Caller {
    if (!caller) {
      throw Unauthorized();
    }
    if (!hasRole(caller, Role.USER)) {
      throw Forbidden('Guests may not access orders');
    }
  }

  private requireAdminCaller(caller: MaybeCaller): asserts caller is Caller {
    if (!caller) {
      throw Unauthorized();
    }
    if (!isAdmin(caller)) {
      throw Forbidden('Only administrators can export');
    }
  }
}
