import { Injectable } from '@nestjs/common';
import { encodeListCursor, keysetAfterSql, orderKeyOf } from '../common/keyset.js';
import { orderBySql, type ListQuery, type SortTerm } from '../common/list-query.js';
import { DatabaseService } from '../database/database.service.js';
import { listPage, type ListPage } from '../database/list-page.js';
import { ORDER_COLUMNS, type OrderRow } from './orders.mapper.js';

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

export const ORDER_SORT_COLUMNS = { created_at: 'created_at', total_cents: 'total_cents' };

/** Rows of one export batch (keyset: each batch is one index range). */
const EXPORT_BATCH = 500;

/**
 * The SQL of the orders list across users (GET /api/v1/orders, GraphQL `orders`, the export).
 * Orders of soft-deleted users are left out (they disappear with their user). Each sort, alone or
 * after `status`, is one index range (migration 1764400000024); the other filters are checked on
 * the rows that range yields.
 */
@Injectable()
export class OrdersRepository {
  constructor(private readonly db: DatabaseService) {}

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
  ): Promise<ListPage<OrderRow>> {
    const params: unknown[] = [];
    const where = this.acrossUsersWhere(filter, liveOwner, params);
    return listPage<OrderRow>(
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
   * range after the previous one: memory stays at one batch whatever the number of rows.
   */
  async *scanAcrossUsers(
    filter: OrderFilter,
    liveOwner: boolean,
    sort: readonly SortTerm[],
  ): AsyncGenerator<OrderRow> {
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
      for (const row of rows) {
        yield row;
      }
      if (rows.length < EXPORT_BATCH) {
        return;
      }
      const last = rows[rows.length - 1] as OrderRow & Record<string, string | number>;
      after = {
        values: sort.map(
          (t) => last[ORDER_SORT_COLUMNS[t.field as keyof typeof ORDER_SORT_COLUMNS]],
        ),
        id: last.id,
      };
    }
  }

  /** GraphQL cursor of a row in this list's order (same format as the REST cursors). */
  cursorAcrossUsers(row: OrderRow, sort: readonly SortTerm[]): string {
    const r = row as OrderRow & Record<string, string | number>;
    return encodeListCursor(
      orderKeyOf('orders-all', sort),
      sort.map((t) => r[ORDER_SORT_COLUMNS[t.field as keyof typeof ORDER_SORT_COLUMNS]]),
      row.id,
    );
  }
}
