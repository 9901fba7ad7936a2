import { Column, Entity, PrimaryColumn } from 'typeorm';
import type { OrderStatus } from '../domain/order.js';

/** Persistence shape only; never returned as a response (see orders.mapper.ts). */
@Entity('orders')
export class OrderEntity {
  @PrimaryColumn({ type: 'varchar', length: 30 })
  id!: string;

  @Column({ name: 'user_id', type: 'varchar', length: 30 })
  userId!: string;

  @Column({ type: 'varchar', length: 9 })
  status!: OrderStatus;

  /** `[{sku, quantity, unit_price_cents}]` as JSON text, read and written whole. */
  @Column({ type: 'text' })
  items!: string;

  @Column({ name: 'total_cents', type: 'bigint' })
  totalCents!: number;

  @Column({ type: 'varchar', length: 3 })
  currency!: string;

  @Column({ name: 'created_at', type: 'varchar', length: 24 })
  createdAt!: string;

  @Column({ name: 'updated_at', type: 'varchar', length: 24 })
  updatedAt!: string;
}
