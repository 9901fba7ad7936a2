import { ApiProperty } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import { ArrayMaxSize, ArrayMinSize, IsArray, IsDefined, ValidateNested } from 'class-validator';
import type { OrderStatus } from '../order.js';
import {
  CurrencyRules,
  MAX_ITEMS,
  QuantityRules,
  SkuRules,
  StatusRules,
  UnitPriceRules,
} from './order.rules.js';

/** REST item: `{sku, quantity, unit_price_cents}`. */
export class OrderItemBody {
  @SkuRules()
  sku!: string;

  @QuantityRules()
  quantity!: number;

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
  @StatusRules()
  status!: OrderStatus;
}
