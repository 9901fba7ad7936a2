import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import type { ListQuery, Page } from '../common/list-query.js';
import { DatabaseService } from '../database/database.service.js';
import { listPage } from '../database/list-page.js';
import type { Order, OrderStatus } from './order.js';
import { OrderEntity } from './order.entity.js';
import { ORDER_COLUMNS, itemsToJson, orderFromRow, type OrderRow } from './orders.mapper.js';

const SORT_COLUMNS = { created_at: 'created_at' };

/**
 * The one owner of `orders` SQL. Reads outside a transaction are raw SQL on `db.query` (an order by
 * id, list pages, the per-user pages); every method taking `manager` runs on the caller's
 * transaction.
 */
@Injectable()
export class OrdersRepository {
  constructor(private readonly db: DatabaseService) {}

  private p(n: number): string {
    return this.db.p(n);
  }

  /** One REST page of a user's orders (of `status` when given); `total` comes from the counters. */
  async list(
    query: ListQuery,
    userId: string,
    status: string | undefined,
    total: Promise<number>,
  ): Promise<Page<Order>> {
    const params: unknown[] = [userId];
    const where = [`user_id = ${this.p(1)}`];
    if (status) {
      params.push(status);
      where.push(`status = ${this.p(2)}`);
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
      total,
    );
    return { data: rows.map(orderFromRow), meta, next };
  }

  /**
   * The first `size + 1` orders of each user (created_at, id ascending within a user, in no
   * particular order across users), optionally after a keyset position and of one status.
   */
  async firstOfUsers(
    userIds: readonly string[],
    opts: { size: number; after?: [unknown, string]; status?: OrderStatus },
  ): Promise<Order[]> {
    if (userIds.length === 0) {
      return [];
    }
    // one LIMITed index range per user, glued with UNION ALL: the cost is the page size per user,
    // however many orders a user has (a window function would number all of them)
    const params: unknown[] = [];
    const parts = userIds.map((userId, i) => {
      params.push(userId);
      const where = [`user_id = ${this.p(params.length)}`];
      if (opts.status) {
        params.push(opts.status);
        where.push(`status = ${this.p(params.length)}`);
      }
      if (opts.after) {
        params.push(opts.after[0], opts.after[1]);
        where.push(`(created_at, id) > (${this.p(params.length - 1)}, ${this.p(params.length)})`);
      }
      params.push(opts.size + 1);
      return `SELECT * FROM (SELECT ${ORDER_COLUMNS} FROM orders WHERE ${where.join(' AND ')}
                ORDER BY created_at ASC, id ASC LIMIT ${this.p(params.length)}) u${i}`;
    });
    const rows = await this.db.query<OrderRow>(parts.join(' UNION ALL '), params);
    return rows.map(orderFromRow);
  }

  /** An order whose user is live. */
  async findOfLiveUser(id: string): Promise<Order | undefined> {
    const rows = await this.db.query<OrderRow>(
      `SELECT ${ORDER_COLUMNS.split(', ')
        .map((c) => `o.${c}`)
        .join(', ')}
         FROM orders o JOIN users u ON u.id = o.user_id
        WHERE o.id = ${this.p(1)} AND u.deleted_at IS NULL`,
      [id],
    );
    return rows[0] ? orderFromRow(rows[0]) : undefined;
  }

  // ---- in a transaction --------------------------------------------------------------------

  async insert(manager: EntityManager, order: Order): Promise<void> {
    await manager.insert(OrderEntity, {
      id: order.id,
      userId: order.userId,
      status: order.status,
      items: itemsToJson(order.items),
      totalCents: order.totalCents,
      currency: order.currency,
      createdAt: order.createdAt,
      updatedAt: order.updatedAt,
    });
  }

  async updateStatus(
    manager: EntityManager,
    id: string,
    status: OrderStatus,
    updatedAt: string,
  ): Promise<void> {
    await manager.update(OrderEntity, { id }, { status, updatedAt });
  }

  /** The row, locked for the rest of the transaction on PostgreSQL (SQLite writes are serialized). */
  async lockedRow(manager: EntityManager, id: string): Promise<OrderEntity | null> {
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
