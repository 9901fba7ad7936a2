import {
  Directive,
  Field,
  ID,
  InputType,
  Int,
  ObjectType,
  registerEnumType,
} from '@nestjs/graphql';
import { Type } from 'class-transformer';
import { ArrayMaxSize, ArrayMinSize, IsArray, ValidateNested } from 'class-validator';
import { Connection } from '../graphql/connection.js';
import { Node } from '../graphql/node.js';
import { DateTimeScalar } from '../graphql/scalars/date-time.scalar.js';
import {
  CurrencyRules,
  MAX_ITEMS,
  QuantityRules,
  SkuRules,
  UnitPriceRules,
} from './dto/order.rules.js';
import { OrderStatus } from '../domain/order.js';

registerEnumType(OrderStatus, {
  name: 'OrderStatus',
  description: 'PENDING -> PAID -> SHIPPED -> DELIVERED, and PENDING or PAID -> CANCELLED.',
});

@ObjectType('OrderItem')
@Directive('@auth(scopes: [])')
export class OrderItemModel {
  @Field()
  sku!: string;

  @Field(() => Int)
  quantity!: number;

  @Field(() => Int, { description: 'Price of one unit in minor units of the order currency.' })
  unitPriceCents!: number;
}

/** GraphQL `Order` (the service's `Order` value is resolved into it). Private to its user and ADMINs. */
@ObjectType('Order', { implements: () => [Node] })
@Directive('@auth(scopes: ["orders:read"])')
@Directive('@cacheControl(maxAge: 0, scope: PRIVATE)')
export class OrderModel implements Node {
  @Field(() => ID)
  id!: string;

  @Field(() => OrderStatus)
  status!: OrderStatus;

  @Field(() => [OrderItemModel])
  items!: OrderItemModel[];

  @Field(() => Int, {
    description: 'Computed by the server: the sum of quantity x unitPriceCents.',
  })
  totalCents!: number;

  @Field({ description: 'ISO 4217 currency code, e.g. EUR.' })
  currency!: string;

  @Field(() => DateTimeScalar)
  createdAt!: string;

  @Field(() => DateTimeScalar)
  updatedAt!: string;
}

@ObjectType('OrderConnection')
@Directive('@auth(scopes: ["orders:read"])')
@Directive('@cacheControl(maxAge: 0, scope: PRIVATE)')
export class OrderConnection extends Connection(OrderModel, 'Order') {}

/** The REST item rules (dto/order.rules.ts) with GraphQL's camelCase member names. */
@InputType('OrderItemInput')
export class OrderItemInput {
  @Field()
  @SkuRules()
  sku!: string;

  @Field(() => Int)
  @QuantityRules()
  quantity!: number;

  @Field(() => Int)
  @UnitPriceRules()
  unitPriceCents!: number;
}

@InputType('CreateOrderInput')
export class CreateOrderInput {
  @Field(() => [OrderItemInput], { description: `1 to ${MAX_ITEMS} items.` })
  @IsArray()
  @ArrayMinSize(1)
  @ArrayMaxSize(MAX_ITEMS)
  @ValidateNested({ each: true })
  @Type(() => OrderItemInput)
  items!: OrderItemInput[];

  @Field({ description: 'ISO 4217 code (any letter case; stored upper case).' })
  @CurrencyRules()
  currency!: string;
}
