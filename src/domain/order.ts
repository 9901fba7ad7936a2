/** Order status (docs/contract.md section 4). */
export enum OrderStatus {
  PENDING = 'pending',
  PAID = 'paid',
  SHIPPED = 'shipped',
  DELIVERED = 'delivered',
  CANCELLED = 'cancelled',
}

export const ORDER_STATUSES: readonly OrderStatus[] = Object.values(OrderStatus);

export interface OrderItem {
  sku: string;
  quantity: number;
  unitPriceCents: number;
}

/** An order as the services hand it out: camelCase, transport-neutral. */
export interface Order {
  id: string;
  userId: string;
  status: OrderStatus;
  items: OrderItem[];
  totalCents: number;
  currency: string;
  createdAt: string;
  updatedAt: string;
}
