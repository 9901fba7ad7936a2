import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { hasRole, isAdmin, type Caller, type MaybeCaller } from '../auth/caller.js';
import { Role } from '../auth/role.js';
import {
  Conflict,
  Forbidden,
  NotFound,
  PreconditionFailed,
  Unauthorized,
  ValidationFailed,
} from '../common/errors.js';
import { isId, newId, nowIso } from '../common/ids.js';
import { parseListQuery, type ListSpec, type Page } from '../common/list-query.js';
import { AuditService } from '../audit/audit.service.js';
import { CountersRepository, CountKeys } from '../database/counters.repository.js';
import { DatabaseService } from '../database/database.service.js';
import { listPage } from '../database/list-page.js';
import { ORDER_STATUSES, OrderStatus, type Order, type OrderItem } from './order.js';
import { MAX_TOTAL_CENTS } from './dto/order.rules.js';
import { OrderEntity } from './order.entity.js';
import { decideTransition, nextStatuses } from './order-status.js';
import { ORDER_COLUMNS, itemsToJson, orderFromRow, type OrderRow } from './orders.mapper.js';

export const ORDER_LIST_SPEC: ListSpec<'status'> = {
  sortFields: ['created_at'],
  defaultSort: [{ field: 'created_at', desc: false }],
  filters: { status: ORDER_STATUSES },
};

const SORT_COLUMNS = { created_at: 'created_at' };

/** A validated new order, transport-neutral (REST and GraphQL inputs both map to it). */
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
    private readonly audit: AuditService,
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

  /** REST list: page/limit, sort `created_at`, filter `status`. */
  async listForUser(
    caller: MaybeCaller,
    userId: string,
    rawQuery: Record<string, unknown>,
  ): Promise<Page<Order>> {
    this.requireOrderRole(caller);
    await this.requireLiveUser(userId);
    this.requireOwnerOrAdmin(caller, userId);
    const query = parseListQuery(rawQuery, ORDER_LIST_SPEC);
    const status = query.filters.status;
    const params: unknown[] = [userId];
    const where = [`user_id = ${this.db.p(1)}`];
    if (status) {
      params.push(status);
      where.push(`status = ${this.db.p(2)}`);
    }
    const { rows, meta, next } = await listPage<OrderRow>(
      this.db,
      {
        list: 'orders',
        columns: ORDER_COLUMNS,
        from: 'orders',
        where,
        params,
        sortColumns: SORT_COLUMNS,
      },
      query,
      this.counters.get(
        status ? CountKeys.ordersOfUserByStatus(userId, status) : CountKeys.ordersOfUser(userId),
      ),
    );
    return { data: rows.map(orderFromRow), meta, next };
  }

  /** Permission to list a user's orders (User.orders in GraphQL), for a user already known to exist. */
  assertCanReadOrdersOf(caller: MaybeCaller, userId: string): void {
    this.requireOrderRole(caller);
    this.requireOwnerOrAdmin(caller, userId);
  }

  /**
   * The first `size + 1` orders of each user (created_at, id ascending), optionally after a keyset
   * position and filtered by status: one statement for any number of users (GraphQL `User.orders`
   * batched by DataLoader). No permission check: call assertCanReadOrdersOf first.
   */
  async pagesForUsers(
    userIds: readonly string[],
    opts: { size: number; after?: [unknown, string]; status?: OrderStatus },
  ): Promise<Map<string, Order[]>> {
    const pages = new Map<string, Order[]>(userIds.map((id) => [id, []]));
    if (userIds.length === 0) {
      return pages;
    }
    // one LIMITed index range per user, glued with UNION ALL: the cost is the page size per user,
    // however many orders a user has (a window function would number all of them)
    const params: unknown[] = [];
    const parts = userIds.map((userId, i) => {
      params.push(userId);
      const where = [`user_id = ${this.db.p(params.length)}`];
      if (opts.status) {
        params.push(opts.status);
        where.push(`status = ${this.db.p(params.length)}`);
      }
      if (opts.after) {
        params.push(opts.after[0], opts.after[1]);
        where.push(
          `(created_at, id) > (${this.db.p(params.length - 1)}, ${this.db.p(params.length)})`,
        );
      }
      params.push(opts.size + 1);
      return `SELECT * FROM (SELECT ${ORDER_COLUMNS} FROM orders WHERE ${where.join(' AND ')}
                ORDER BY created_at ASC, id ASC LIMIT ${this.db.p(params.length)}) u${i}`;
    });
    const rows = await this.db.query<OrderRow>(parts.join(' UNION ALL '), params);
    for (const row of rows) {
      pages.get(row.user_id)?.push(orderFromRow(row));
    }
    for (const page of pages.values()) {
      page.sort((a, b) =>
        a.createdAt !== b.createdAt ? (a.createdAt < b.createdAt ? -1 : 1) : a.id < b.id ? -1 : 1,
      );
    }
    return pages;
  }

  /** Orders per user (optionally of one status): one read of their counters for all of them. */
  async countsForUsers(
    userIds: readonly string[],
    status?: OrderStatus,
  ): Promise<Map<string, number>> {
    const key = (id: string) =>
      status ? CountKeys.ordersOfUserByStatus(id, status) : CountKeys.ordersOfUser(id);
    const byKey = await this.counters.getMany(userIds.map(key));
    return new Map(userIds.map((id) => [id, byKey.get(key(id)) ?? 0]));
  }

  /** An order of a live user, or undefined (malformed ids are simply unknown). No permission check. */
  async findById(id: string): Promise<Order | undefined> {
    if (!isId('order', id)) {
      return undefined;
    }
    const rows = await this.db.query<OrderRow>(
      `SELECT ${ORDER_COLUMNS.split(', ')
        .map((c) => `o.${c}`)
        .join(', ')}
         FROM orders o JOIN users u ON u.id = o.user_id
        WHERE o.id = ${this.db.p(1)} AND u.deleted_at IS NULL`,
      [id],
    );
    return rows[0] ? orderFromRow(rows[0]) : undefined;
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
      await manager.insert(OrderEntity, {
        id: order.id,
        userId,
        status: order.status,
        items: itemsToJson(order.items),
        totalCents: order.totalCents,
        currency: order.currency,
        createdAt: now,
        updatedAt: now,
      });
      this.counters.add(tx, {
        [CountKeys.ordersOfUser(userId)]: 1,
        [CountKeys.ordersOfUserByStatus(userId, order.status)]: 1,
        [CountKeys.orders()]: 1,
        [CountKeys.ordersByStatus(order.status)]: 1,
      });
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
      const entity = isId('order', id) ? await this.lockedRow(manager, id) : null;
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
      await manager.update(OrderEntity, { id }, { status, updatedAt });
      this.counters.add(tx, {
        [CountKeys.ordersOfUserByStatus(current.userId, current.status)]: -1,
        [CountKeys.ordersOfUserByStatus(current.userId, status)]: 1,
        [CountKeys.ordersByStatus(current.status)]: -1,
        [CountKeys.ordersByStatus(status)]: 1,
      });
      if (isAdmin(caller)) {
        await this.audit.record(manager, {
          actor: caller,
          action: 'order.status_changed',
          target: { type: 'order', id },
          changes: { status: [current.status, status] },
        });
      }
      return { ...current, status, updatedAt };
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
    const rows = await this.db.query<{ id: string }>(
      `SELECT id FROM users WHERE id = ${this.db.p(1)} AND deleted_at IS NULL`,
      [userId],
    );
    if (rows.length === 0) {
      throw NotFound('User');
    }
  }

  private async userIsLive(manager: EntityManager, userId: string): Promise<boolean> {
    const rows = await manager.query<unknown[]>(
      `SELECT id FROM users WHERE id = ${this.db.p(1)} AND deleted_at IS NULL`,
      [userId],
    );
    return rows.length > 0;
  }

  /** The row, locked for the rest of the transaction on PostgreSQL (SQLite writes are serialized). */
  private async lockedRow(manager: EntityManager, id: string): Promise<OrderEntity | null> {
    const qb = manager
      .getRepository(OrderEntity)
      .createQueryBuilder('o')
      .where('o.id = :id', { id });
    if (this.db.dialect === 'postgres') {
      qb.setLock('pessimistic_write');
    }
    return qb.getOne();
  }
}

/** A timestamp strictly after `previous` (two changes in one millisecond still change the ETag). */
function laterThan(previous: string): string {
  const now = nowIso();
  return now > previous ? now : new Date(Date.parse(previous) + 1).toISOString();
}
