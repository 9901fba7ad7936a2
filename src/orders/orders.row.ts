import type { Order, OrderItem, OrderStatus } from '../domain/order.js';

/** An `orders` row as the repository's raw SQL reads it (`ORDER_COLUMNS`), and the `Order` it holds. */
export interface OrderRow {
  id: string;
  user_id: string;
  status: string;
  items: string;
  total_cents: number | string;
  currency: string;
  created_at: string;
  updated_at: string;
}

export const ORDER_COLUMNS =
  'id, user_id, status, items, total_cents, currency, created_at, updated_at';

interface StoredItem {
  sku: string;
  quantity: number;
  unit_price_cents: number;
}

export function itemsToJson(items: OrderItem[]): string {
  return JSON.stringify(
    items.map(
      (i): StoredItem => ({ sku: i.sku, quantity: i.quantity, unit_price_cents: i.unitPriceCents }),
    ),
  );
}

function itemsFromJson(text: string): OrderItem[] {
  return (JSON.parse(text) as StoredItem[]).map((i) => ({
    sku: i.sku,
    quantity: i.quantity,
    unitPriceCents: i.unit_price_cents,
  }));
}

export function orderFromRow(row: OrderRow): Order {
  return {
    id: row.id,
    userId: row.user_id,
    status: row.status as OrderStatus,
    items: itemsFromJson(row.items),
    // bigint comes back as a string from pg; totals stay far below 2^53 (see dto limits)
    totalCents: Number(row.total_cents),
    currency: row.currency,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}
