import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import {
  keysetAfterSql,
  keysetParams,
  keysetSql,
  orderBySql,
  releaseBatch,
  type PageWindow,
} from '../database/paging.js';
import { SqlTexts } from '../database/sql-texts.js';
import type { ListQuery, SortTerm } from '../common/list-query.js';
import { restPage } from '../database/page-reader.js';
import type { PageValue } from '../database/connection-value.js';
import { DatabaseService } from '../database/database.service.js';
import type { Order, OrderStatus } from '../domain/order.js';
import { OrderEntity } from './order.entity.js';
import { ORDER_COLUMNS, itemsToJson, orderFromRow, type OrderRow } from './orders.row.js';

const SORT_COLUMNS = { created_at: 'created_at' };

/** Filters of the orders list across users (values already validated). */
export interface OrderFilter {
  status?: string;
  userId?: string;
  /** Strictly later than (`>`). */
  createdAfter?: string;
  /** Up to and including (`<=`). */
  createdBefore?: string;
  /** Inclusive bounds. */
  minTotalCents?: number;
  maxTotalCents?: number;
}

const ORDER_SORT_COLUMNS = { created_at: 'created_at', total_cents: 'total_cents' };

/** Rows of one export batch (keyset: each batch is one index range). */
const EXPORT_BATCH = 500;

/**
 * The one owner of `orders` SQL. Reads outside a transaction are raw SQL on `db.query` (an order by
 * id, list pages, the per-user pages); every method taking `manager` runs on the caller's
 * transaction.
 */
@Injectable()
export class OrdersRepository {
  /** The batched statements' texts, by how many users they read (sql-texts.ts). */
  private readonly texts = new SqlTexts();

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
  ): Promise<PageValue<OrderRow>> {
    const params: unknown[] = [userId];
    const where = [`user_id = ${this.p(1)}`];
    if (status) {
      params.push(status);
      where.push(`status = ${this.p(2)}`);
    }
    return restPage<OrderRow>(
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
  }

  /**
   * The first `size + 1` orders of each user (created_at, id ascending within a user, in no
   * particular order across users), optionally after a keyset position and of one status.
   */
  async firstOfUsers(
    userIds: readonly string[],
    opts: { size: number; after?: PageWindow['after']; status?: OrderStatus },
  ): Promise<Order[]> {
    if (userIds.length === 0) {
      return [];
    }
    const window = { size: opts.size, backward: false, after: opts.after };
    const bounds = keysetParams(window);
    const params: unknown[] = [];
    for (const userId of userIds) {
      params.push(userId, ...(opts.status ? [opts.status] : []), ...bounds, window.size + 1);
    }
    // one LIMITed index range per user, glued with UNION ALL: the cost is the page size per user,
    // however many orders a user has (a window function would number all of them); the text
    // depends on how many users, and on whether a status and a position are bound (sql-texts.ts)
    const shape = `first:${userIds.length}:${opts.status ? 's' : ''}${opts.after ? 'a' : ''}`;
    const sql = this.texts.get(shape, () => {
      const numbered: unknown[] = [];
      const parts = userIds.map((userId, i) => {
        numbered.push(userId);
        const where = [`user_id = ${this.p(numbered.length)}`];
        if (opts.status) {
          numbered.push(opts.status);
          where.push(`status = ${this.p(numbered.length)}`);
        }
        const ks = keysetSql(window, 'created_at', false, (n) => this.p(n), numbered);
        numbered.push(ks.limit);
        return `SELECT * FROM (SELECT ${ORDER_COLUMNS} FROM orders WHERE ${[...where, ...ks.where].join(' AND ')}
                ORDER BY ${ks.orderBy} LIMIT ${this.p(numbered.length)}) u${i}`;
      });
      return parts.join(' UNION ALL ');
    });
    const rows = await this.db.query<OrderRow>(sql, params);
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

  /** WHERE terms and their parameters. `liveOwner`: the owner is known to be live (no check). */
  private acrossUsersWhere(filter: OrderFilter, liveOwner: boolean, params: unknown[]): string[] {
    const where: string[] = [];
    const bind = (v: unknown) => {
      params.push(v);
      return this.db.p(params.length);
    };
    if (filter.status !== undefined) {
      where.push(`status = ${bind(filter.status)}`);
    }
    if (filter.userId !== undefined) {
      where.push(`user_id = ${bind(filter.userId)}`);
    }
    if (filter.createdAfter !== undefined) {
      where.push(`created_at > ${bind(filter.createdAfter)}`);
    }
    if (filter.createdBefore !== undefined) {
      where.push(`created_at <= ${bind(filter.createdBefore)}`);
    }
    if (filter.minTotalCents !== undefined) {
      where.push(`total_cents >= ${bind(filter.minTotalCents)}`);
    }
    if (filter.maxTotalCents !== undefined) {
      where.push(`total_cents <= ${bind(filter.maxTotalCents)}`);
    }
    if (!liveOwner) {
      where.push(
        'NOT EXISTS (SELECT 1 FROM users du WHERE du.id = orders.user_id AND du.deleted_at IS NOT NULL)',
      );
    }
    return where;
  }

  /** One page; `total` from the caller (counters, or `count` below). */
  pageAcrossUsers(
    filter: OrderFilter,
    liveOwner: boolean,
    query: ListQuery,
    total: Promise<number>,
  ): Promise<PageValue<OrderRow>> {
    const params: unknown[] = [];
    const where = this.acrossUsersWhere(filter, liveOwner, params);
    return restPage<OrderRow>(
      this.db,
      {
        list: 'orders-all',
        columns: ORDER_COLUMNS,
        from: 'orders',
        where,
        params,
        sortColumns: ORDER_SORT_COLUMNS,
      },
      query,
      total,
    );
  }

  /** Exact count of the matching orders (range filters; the counters answer the others). */
  async countAcrossUsers(filter: OrderFilter, liveOwner: boolean): Promise<number> {
    const params: unknown[] = [];
    const where = this.acrossUsersWhere(filter, liveOwner, params);
    const rows = await this.db.query<{ n: number | string }>(
      `SELECT COUNT(*) AS n FROM orders${where.length > 0 ? ` WHERE ${where.join(' AND ')}` : ''}`,
      params,
    );
    return Number(rows[0]?.n ?? 0);
  }

  /**
   * Every matching order in the list's order, in batches of EXPORT_BATCH rows, each batch a keyset
   * range after the previous one: memory stays at one batch whatever the number of rows. Each batch
   * is yielded whole and emptied once its reader is done with it (releaseBatch).
   */
  async *scanAcrossUsers(
    filter: OrderFilter,
    liveOwner: boolean,
    sort: readonly SortTerm[],
  ): AsyncGenerator<OrderRow[]> {
    let after: { values: (string | number)[]; id: string } | undefined;
    for (;;) {
      const params: unknown[] = [];
      const where = this.acrossUsersWhere(filter, liveOwner, params);
      if (after) {
        where.push(keysetAfterSql(sort, ORDER_SORT_COLUMNS, after, (n) => this.db.p(n), params));
      }
      params.push(EXPORT_BATCH);
      const rows = await this.db.query<OrderRow>(
        `SELECT ${ORDER_COLUMNS} FROM orders${where.length > 0 ? ` WHERE ${where.join(' AND ')}` : ''}
         ORDER BY ${orderBySql([...sort], ORDER_SORT_COLUMNS)} LIMIT ${this.db.p(params.length)}`,
        params,
      );
      if (rows.length === 0) {
        return;
      }
      const last = rows[rows.length - 1] as OrderRow & Record<string, string | number>;
      after = {
        values: sort.map(
          (t) => last[ORDER_SORT_COLUMNS[t.field as keyof typeof ORDER_SORT_COLUMNS]],
        ),
        id: last.id,
      };
      const full = rows.length === EXPORT_BATCH;
      yield rows;
      releaseBatch(rows);
      if (!full) {
        return;
      }
    }
  }
}
