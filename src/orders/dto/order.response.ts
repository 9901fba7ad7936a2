import { ApiProperty, ApiSchema } from '@nestjs/swagger';
import { ORDER_STATUSES, OrderStatus } from '../../domain/order.js';

/** An order line in REST bodies. */
@ApiSchema({ name: 'OrderItem' })
export class OrderItemResponse {
  @ApiProperty({ example: 'BOOK-0042' })
  sku!: string;

  @ApiProperty({ type: 'integer', minimum: 1, example: 2 })
  quantity!: number;

  @ApiProperty({ type: 'integer', minimum: 0, example: 1250 })
  unit_price_cents!: number;
}

/** An order in REST bodies (snake_case): the type `toRestOrder` returns and the schema `Order`. */
@ApiSchema({ name: 'Order' })
export class OrderResponse {
  @ApiProperty({ example: 'ord_01JD5Z6K3M8Q2W4E6R8T0Y2U4I' })
  id!: string;

  @ApiProperty({ example: 'usr_01JD5Z6K3M8Q2W4E6R8T0Y2U4I' })
  user_id!: string;

  @ApiProperty({
    enum: ORDER_STATUSES,
    enumName: 'OrderStatus',
    example: OrderStatus.PENDING,
    description:
      'pending → paid → shipped → delivered; pending or paid → cancelled (docs/orders-and-rooms.md).',
  })
  status!: OrderStatus;

  @ApiProperty({ type: () => [OrderItemResponse] })
  items!: OrderItemResponse[];

  @ApiProperty({
    type: 'integer',
    minimum: 0,
    example: 2500,
    description: 'Sum of quantity × unit price.',
  })
  total_cents!: number;

  @ApiProperty({ pattern: '^[A-Z]{3}$', example: 'EUR' })
  currency!: string;

  @ApiProperty({ format: 'date-time', example: '2026-11-23T18:00:00.000Z' })
  created_at!: string;

  @ApiProperty({ format: 'date-time', example: '2026-11-23T18:00:00.000Z' })
  updated_at!: string;
}
