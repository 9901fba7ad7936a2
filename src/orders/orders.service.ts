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
} from '../common/errors.js';
import { isId, newId, nowIso } from '../common/ids.js';
import { orderBySql, parseListQuery, type ListSpec, type Page } from '../common/list-query.js';
import { DatabaseService } from '../database/database.service.js';
import { ORDER_STATUSES, OrderStatus, type Order, type OrderItem } from './order.js';
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

/** Keyset page of one user's orders, newest last (GraphQL connections). */
export interface OrderSlice {
  orders: Order[];
  hasMore: boolean;
}

/**
 * The one place the order rules live (DESIGN.md sections 4 and 7); REST and GraphQL call these.
 * Permission checks run in a fixed order: role (GUEST 403), existence (404), ownership (403).
 * Orders of a soft-deleted user disappear with it (404).
 */
@Injectable()
export class OrdersService {
  constructor(private readonly db: DatabaseService) {}

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
    const params: unknown[] = [userId];
    let where = `user_id = ${this.db.p(1)}`;
    if (query.filters.status) {
      params.push(query.filters.status);
      where += ` AND status = ${this.db.p(2)}`;
    }
    const [countRow] = await this.db.query<{ total: number | string }>(
      `SELECT COUNT(*) AS total FROM orders WHERE ${where}`,
      params,
    );
    const rows = await this.db.query<OrderRow>(
      `SELECT ${ORDER_COLUMNS} FROM orders WHERE ${where} ORDER BY ${orderBySql(query.sort, SORT_COLUMNS)}
       LIMIT ${query.limit} OFFSET ${(query.page - 1) * query.limit}`,
      params,
    );
    return {
      data: rows.map(orderFromRow),
      meta: { page: query.page, limit: query.limit, total: Number(countRow?.total ?? 0) },
    };
  }

  /**
   * Keyset slice for GraphQL (`User.orders(first, after, status)`): ordered by id, which is a ULID and
   * therefore creation order; `after` is the id of the last order seen. Permission as for the list.
   */
  async sliceForUser(
    caller: MaybeCaller,
    userId: string,
    opts: { first: number; afterId?: string; status?: OrderStatus },
  ): Promise<OrderSlice> {
    this.requireOrderRole(caller);
    await this.requireLiveUser(userId);
    this.requireOwnerOrAdmin(caller, userId);
    const params: unknown[] = [userId];
    let where = `user_id = ${this.db.p(1)}`;
    if (opts.status) {
      params.push(opts.status);
      where += ` AND status = ${this.db.p(params.length)}`;
    }
    if (opts.afterId) {
      params.push(opts.afterId);
      where += ` AND id > ${this.db.p(params.length)}`;
    }
    const rows = await this.db.query<OrderRow>(
      `SELECT ${ORDER_COLUMNS} FROM orders WHERE ${where} ORDER BY id ASC LIMIT ${opts.first + 1}`,
      params,
    );
    return {
      orders: rows.slice(0, opts.first).map(orderFromRow),
      hasMore: rows.length > opts.first,
    };
  }

  async countForUser(userId: string, status?: OrderStatus): Promise<number> {
    const params: unknown[] = [userId];
    let where = `user_id = ${this.db.p(1)}`;
    if (status) {
      params.push(status);
      where += ` AND status = ${this.db.p(2)}`;
    }
    const [row] = await this.db.query<{ total: number | string }>(
      `SELECT COUNT(*) AS total FROM orders WHERE ${where}`,
      params,
    );
    return Number(row?.total ?? 0);
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
      totalCents: input.items.reduce((sum, i) => sum + i.quantity * i.unitPriceCents, 0),
      currency: input.currency,
      createdAt: now,
      updatedAt: now,
    };
    await this.db.transaction(async ({ manager }) => {
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
    return this.db.transaction(async ({ manager }) => {
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
      return { ...current, status, updatedAt };
    });
  }

  // ---- internals ---------------------------------------------------------------------------

  /** GUEST (and anonymous) callers have no orders and see none (DESIGN.md section 7). */
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
