import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { hasRole, isAdmin, type Caller, type MaybeCaller } from '../identity/caller.js';
import { Role } from '../identity/role.js';
import {
  Conflict,
  type DomainError,
  Forbidden,
  NotFound,
  PreconditionFailed,
  Unauthorized,
  ValidationFailed,
} from '../common/errors.js';
import { isId, newId, nowIso } from '../common/ids.js';
import { parseListQuery, type ListSpec, type PageRequest } from '../common/list-query.js';
import { ChangeRecord } from '../changes/change-record.js';
import { CountersRepository, CountKeys } from '../database/counters.repository.js';
import { DatabaseService } from '../database/database.service.js';
import { encodeCursor, pageWindow, type PageWindow } from '../database/paging.js';
import { connectionFromRows, mapPage, type PageValue } from '../database/connection-value.js';
import { ORDER_STATUSES, OrderStatus, type Order, type OrderItem } from '../domain/order.js';
import { MAX_TOTAL_CENTS } from './dto/order.rules.js';
import { decideTransition, nextStatuses } from './order-status.js';
import { orderFromRow } from './orders.row.js';
import { OrdersRepository } from './orders.repository.js';
import { UsersRepository } from '../users/users.repository.js';

export const ORDER_LIST_SPEC: ListSpec<'status'> = {
  sortFields: ['created_at'],
  defaultSort: [{ field: 'created_at', desc: false }],
  filters: { status: ORDER_STATUSES },
};

/** A validated new order, transport-neutral (REST and GraphQL inputs both map to it). */
/** Cursor key of `User.orders` (kept as issued: docs/lists.md, "Paging module"). */
const USER_ORDERS_KEY = 'created_at';

/** The counter of a user's orders (of one status). */
function countKey(userId: string, status: string | undefined): string {
  return status ? CountKeys.ordersOfUserByStatus(userId, status) : CountKeys.ordersOfUser(userId);
}

export interface NewOrder {
  items: OrderItem[];
  currency: string;
}

/** Checked against the stored order inside the write transaction (If-Match); false -> 412. */
export type OrderPrecondition = (current: Order) => boolean;

/**
 * The one place the order rules live (docs/contract.md sections 4 and 7); REST and GraphQL call these.
 * Permission checks run in a fixed order: role (GUEST 403), existence (404), ownership (403).
 * Orders of a soft-deleted user disappear with it (404).
 */
@Injectable()
export class OrdersService {
  constructor(
    private readonly db: DatabaseService,
    private readonly counters: CountersRepository,
    private readonly orders: OrdersRepository,
    private readonly users: UsersRepository,
    private readonly changes: ChangeRecord,
  ) {}

  // ---- reads -------------------------------------------------------------------------------

  async get(caller: MaybeCaller, id: string): Promise<Order> {
    this.requireOrderRole(caller);
    const order = await this.findById(id);
    if (!order) {
      throw NotFound('Order');
    }
    this.requireOwnerOrAdmin(caller, order.userId);
    return order;
  }

  /**
   * A user's orders, REST (`GET /users/{id}/orders`) and GraphQL (`User.orders`) alike, for the users
   * of `userIds` at once: one page value per user, in that order, or the error of a user whose
   * orders the caller may not read (a GUEST, another user's orders: FORBIDDEN). A REST request names
   * one user, who must be live (404), and carries its query parameters (page or cursor, `sort`,
   * `status`). A GraphQL window (`first`/`after`, oldest first, `status` beside it) serves a page of
   * users with one statement (UNION ALL); their totals (one read of the counters) are read only when
   * selected.
   */
  async ordersOfUsers(
    caller: MaybeCaller,
    userIds: readonly string[],
    request: PageRequest,
    filter: { status?: OrderStatus } = {},
  ): Promise<(PageValue<Order> | DomainError)[]> {
    if ('rest' in request) {
      const [userId] = userIds;
      this.requireOrderRole(caller);
      await this.requireLiveUser(userId);
      this.requireOwnerOrAdmin(caller, userId);
      const query = parseListQuery(request.rest, ORDER_LIST_SPEC);
      const status = query.filters.status;
      return [
        mapPage(
          await this.orders.list(
            query,
            userId,
            status,
            this.counters.get(countKey(userId, status)),
          ),
          orderFromRow,
        ),
      ];
    }
    const refusals = userIds.map((userId) => this.refusalOf(caller, userId));
    const readable = userIds.filter((_, i) => refusals[i] === undefined);
    let window: PageWindow;
    try {
      window = pageWindow(
        { first: request.window.first, after: request.window.after },
        USER_ORDERS_KEY,
      );
    } catch (err) {
      return refusals.map((refused) => refused ?? (err as DomainError));
    }
    const { status } = filter;
    const pages = await this.pagesForUsers(readable, {
      size: window.size,
      after: window.after,
      status,
    });
    let counts: Promise<Map<string, number>> | undefined;
    const countOf = async (userId: string) => {
      counts ??= this.counters.getMany(readable.map((id) => countKey(id, status)));
      return (await counts).get(countKey(userId, status)) ?? 0;
    };
    return userIds.map((userId, i) => {
      const refused = refusals[i];
      if (refused) {
        return refused;
      }
      return connectionFromRows(
        pages.get(userId) ?? [],
        window,
        (o) => encodeCursor(USER_ORDERS_KEY, [o.createdAt], o.id),
        {
          totalCount: () => countOf(userId),
          // forward only: something preceded `after`
          existsBeyond: async () => window.after !== undefined,
        },
      );
    });
  }

  /** Why the caller may not read the orders of `userId` (an existing user), or undefined. */
  private refusalOf(caller: MaybeCaller, userId: string): DomainError | undefined {
    try {
      this.requireOrderRole(caller);
      this.requireOwnerOrAdmin(caller, userId);
      return undefined;
    } catch (err) {
      return err as DomainError;
    }
  }

  /**
   * The first `size + 1` orders of each user (created_at, id ascending), optionally after a keyset
   * position and filtered by status: one statement for any number of users.
   */
  private async pagesForUsers(
    userIds: readonly string[],
    opts: { size: number; after?: PageWindow['after']; status?: OrderStatus },
  ): Promise<Map<string, Order[]>> {
    const pages = new Map<string, Order[]>(userIds.map((id) => [id, []]));
    if (userIds.length === 0) {
      return pages;
    }
    for (const order of await this.orders.firstOfUsers(userIds, opts)) {
      pages.get(order.userId)?.push(order);
    }
    for (const page of pages.values()) {
      page.sort((a, b) =>
        a.createdAt !== b.createdAt ? (a.createdAt < b.createdAt ? -1 : 1) : a.id < b.id ? -1 : 1,
      );
    }
    return pages;
  }

  /** An order of a live user, or undefined (malformed ids are simply unknown). No permission check. */
  async findById(id: string): Promise<Order | undefined> {
    if (!isId('order', id)) {
      return undefined;
    }
    return this.orders.findOfLiveUser(id);
  }

  // ---- writes ------------------------------------------------------------------------------

  async create(caller: MaybeCaller, userId: string, input: NewOrder): Promise<Order> {
    this.requireOrderRole(caller);
    await this.requireLiveUser(userId);
    this.requireOwnerOrAdmin(caller, userId);
    const totalCents = input.items.reduce((sum, i) => sum + i.quantity * i.unitPriceCents, 0);
    if (totalCents > MAX_TOTAL_CENTS) {
      throw ValidationFailed([
        {
          field: 'items',
          message: `the order total must not exceed ${MAX_TOTAL_CENTS} minor units`,
        },
      ]);
    }
    const now = nowIso();
    const order: Order = {
      id: newId('order'),
      userId,
      status: OrderStatus.PENDING,
      items: input.items.map((i) => ({
        sku: i.sku,
        quantity: i.quantity,
        unitPriceCents: i.unitPriceCents,
      })),
      totalCents,
      currency: input.currency,
      createdAt: now,
      updatedAt: now,
    };
    await this.db.transaction(async (tx) => {
      const { manager } = tx;
      // the user may have been deleted since the check above: re-check inside the transaction
      if (!(await this.userIsLive(manager, userId))) {
        throw NotFound('User');
      }
      await this.orders.insert(manager, order);
      await this.changes.record(tx, { type: 'order.created', order, actor: caller });
    });
    return order;
  }

  /** A status change through the state machine: invalid -> 409, not the caller's to make -> 403. */
  async updateStatus(
    caller: MaybeCaller,
    id: string,
    status: OrderStatus,
    precondition?: OrderPrecondition,
  ): Promise<Order> {
    this.requireOrderRole(caller);
    return this.db.transaction(async (tx) => {
      const { manager } = tx;
      const entity = isId('order', id) ? await this.orders.lockedRow(manager, id) : null;
      if (!entity || !(await this.userIsLive(manager, entity.userId))) {
        throw NotFound('Order');
      }
      this.requireOwnerOrAdmin(caller, entity.userId);
      const current = orderFromRow({
        id: entity.id,
        user_id: entity.userId,
        status: entity.status,
        items: entity.items,
        total_cents: entity.totalCents,
        currency: entity.currency,
        created_at: entity.createdAt,
        updated_at: entity.updatedAt,
      });
      if (precondition && !precondition(current)) {
        throw PreconditionFailed();
      }
      switch (decideTransition(caller.role, current.status, status)) {
        case 'allowed':
          break;
        case 'invalid': {
          const next = nextStatuses(current.status);
          throw Conflict(
            `An order that is ${current.status} cannot become ${status}` +
              (next.length > 0
                ? ` (allowed: ${next.join(', ')})`
                : ` (${current.status} is final)`),
            [{ field: 'status', message: `invalid transition ${current.status} -> ${status}` }],
          );
        }
        case 'forbidden':
          throw Forbidden(
            hasRole(caller, Role.USER)
              ? 'You may only cancel your own pending orders'
              : 'You may not change orders',
          );
      }
      const updatedAt = laterThan(current.updatedAt);
      await this.orders.updateStatus(manager, id, status, updatedAt);
      const updated = { ...current, status, updatedAt };
      await this.changes.record(tx, {
        type: 'order.status_changed',
        before: current,
        after: updated,
        actor: caller,
      });
      return updated;
    });
  }

  // ---- internals ---------------------------------------------------------------------------

  /** GUEST (and anonymous) callers have no orders and see none (docs/contract.md section 7). */
  private requireOrderRole(caller: MaybeCaller): asserts caller is Caller {
    if (!caller) {
      throw Unauthorized();
    }
    if (!hasRole(caller, Role.USER)) {
      throw Forbidden('Guests may not access orders');
    }
  }

  private requireOwnerOrAdmin(caller: Caller, ownerId: string): void {
    if (!isAdmin(caller) && caller.userId !== ownerId) {
      throw Forbidden('You may only access your own orders');
    }
  }

  private async requireLiveUser(userId: string): Promise<void> {
    if (!isId('user', userId)) {
      throw NotFound('User');
    }
    if (!(await this.users.isLive(userId))) {
      throw NotFound('User');
    }
  }

  private async userIsLive(manager: EntityManager, userId: string): Promise<boolean> {
    return this.users.isLive(userId, manager);
  }
}

/** A timestamp strictly after `previous` (two changes in one millisecond still change the ETag). */
function laterThan(previous: string): string {
  const now = nowIso();
  return now > previous ? now : new Date(Date.parse(previous) + 1).toISOString();
}
