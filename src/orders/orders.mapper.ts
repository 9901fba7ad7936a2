import type { OrderResponse } from './dto/order.response.js';
import type { Order } from '../domain/order.js';

/** REST body of an order (snake_case). */
export function toRestOrder(order: Order): OrderResponse {
  return {
    id: order.id,
    user_id: order.userId,
    status: order.status,
    items: order.items.map((i) => ({
      sku: i.sku,
      quantity: i.quantity,
      unit_price_cents: i.unitPriceCents,
    })),
    total_cents: order.totalCents,
    currency: order.currency,
    created_at: order.createdAt,
    updated_at: order.updatedAt,
  };
}
