import { ApiProperty } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import { ArrayMaxSize, ArrayMinSize, IsArray, IsDefined, ValidateNested } from 'class-validator';
import { ORDER_STATUSES, type OrderStatus } from '../../domain/order.js';
import {
  CurrencyRules,
  MAX_ITEMS,
  MAX_QUANTITY,
  MAX_UNIT_PRICE_CENTS,
  QuantityRules,
  SkuRules,
  StatusRules,
  UnitPriceRules,
} from './order.rules.js';

/** REST item: `{sku, quantity, unit_price_cents}`. */
export class OrderItemBody {
  @ApiProperty({ minLength: 1, maxLength: 64, pattern: '^[A-Za-z0-9._:/-]+$', example: 'BOOK-1' })
  @SkuRules()
  sku!: string;

  @ApiProperty({ type: 'integer', minimum: 1, maximum: MAX_QUANTITY, example: 2 })
  @QuantityRules()
  quantity!: number;

  @ApiProperty({ type: 'integer', minimum: 0, maximum: MAX_UNIT_PRICE_CENTS, example: 1250 })
  @UnitPriceRules()
  unit_price_cents!: number;
}

/** `POST /users/{id}/orders`: the server computes `total_cents`; status starts `pending`. */
export class CreateOrderBody {
  @ApiProperty({ type: () => [OrderItemBody], minItems: 1, maxItems: MAX_ITEMS })
  @IsDefined()
  @IsArray()
  @ArrayMinSize(1)
  @ArrayMaxSize(MAX_ITEMS)
  @ValidateNested({ each: true })
  @Type(() => OrderItemBody)
  items!: OrderItemBody[];

  @CurrencyRules()
  currency!: string;
}

/** `PATCH /orders/{id}`: only the status changes (merge patch with one member). */
export class UpdateOrderBody {
  @ApiProperty({ enum: ORDER_STATUSES })
  @StatusRules()
  status!: OrderStatus;
}
