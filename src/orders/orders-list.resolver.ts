import {
  Args,
  Context,
  Directive,
  Field,
  ID,
  InputType,
  Int,
  Query,
  registerEnumType,
  Resolver,
} from '@nestjs/graphql';
import { BadRequest, type ErrorDetail } from '../common/errors.js';
import { MAX_LIMIT } from '../common/list-query.js';
import type { ConnectionValue } from '../database/connection-value.js';
import { OrderDirection } from '../graphql/connection.js';
import type { GqlContext } from '../graphql/context.js';
import { DateTimeScalar } from '../graphql/scalars/date-time.scalar.js';
import { MAX_TOTAL_CENTS } from './dto/order.rules.js';
import { OrderStatus, type Order } from '../domain/order.js';
import { OrderConnection, OrderModel } from './order.model.js';
import { OrdersListService } from './orders-list.service.js';

export enum OrderOrderField {
  CREATED_AT = 'created_at',
  TOTAL_CENTS = 'total_cents',
}
registerEnumType(OrderOrderField, { name: 'OrderOrderField' });

@InputType('OrderOrder', {
  description: 'Default: CREATED_AT ASC; ties are broken by id in the same direction.',
})
export class OrderOrder {
  @Field(() => OrderOrderField)
  field!: OrderOrderField;

  @Field(() => OrderDirection, { defaultValue: OrderDirection.ASC })
  direction!: OrderDirection;
}

/** The filters of GET /api/v1/orders, camelCase (docs/admin.md). */
@InputType('OrderFilter')
export class OrderFilterInput {
  @Field(() => OrderStatus, { nullable: true })
  status?: OrderStatus | null;

  @Field(() => ID, { nullable: true, description: 'A USER may only name themself.' })
  userId?: string | null;

  @Field(() => DateTimeScalar, { nullable: true, description: 'Strictly later than (>).' })
  createdAfter?: string | null;

  @Field(() => DateTimeScalar, { nullable: true, description: 'At or before (<=).' })
  createdBefore?: string | null;

  @Field(() => Int, { nullable: true, description: 'Inclusive.' })
  minTotalCents?: number | null;

  @Field(() => Int, { nullable: true, description: 'Inclusive.' })
  maxTotalCents?: number | null;
}

/** `orders(filter, first, after, orderBy)`: the orders list across users; rules in OrdersListService. */
@Resolver(() => OrderModel)
export class OrdersListResolver {
  constructor(private readonly list: OrdersListService) {}

  @Query(() => OrderConnection, {
    nullable: true,
    description:
      'Orders across users: every order for ADMINs, their own for USERs (FORBIDDEN for another userId or a GUEST).',
  })
  @Directive('@auth(requires: USER, scopes: ["orders:read"])')
  async orders(
    @Context() ctx: GqlContext,
    @Args('filter', { type: () => OrderFilterInput, nullable: true })
    filter?: OrderFilterInput | null,
    @Args('first', { type: () => Int, nullable: true, description: 'Default 20, at most 100.' })
    first?: number | null,
    @Args('after', { type: () => String, nullable: true }) after?: string | null,
    @Args('orderBy', { type: () => OrderOrder, nullable: true }) orderBy?: OrderOrder | null,
  ): Promise<ConnectionValue<Order>> {
    const details: ErrorDetail[] = [];
    if (first !== undefined && first !== null && (first < 0 || first > MAX_LIMIT)) {
      details.push({ field: 'first', message: `first must be an integer from 0 to ${MAX_LIMIT}` });
    }
    for (const name of ['minTotalCents', 'maxTotalCents'] as const) {
      const v = filter?.[name];
      if (v !== undefined && v !== null && (v < 0 || v > MAX_TOTAL_CENTS)) {
        details.push({ field: name, message: `${name} must be from 0 to ${MAX_TOTAL_CENTS}` });
      }
    }
    const checked = this.list.filterFrom(
      {
        status: filter?.status ?? undefined,
        userId: filter?.userId ?? undefined,
        createdAfter: filter?.createdAfter ?? undefined,
        createdBefore: filter?.createdBefore ?? undefined,
        minTotalCents: filter?.minTotalCents ?? undefined,
        maxTotalCents: filter?.maxTotalCents ?? undefined,
      },
      details,
      'userId',
    );
    if (details.length > 0) {
      throw BadRequest('Invalid arguments', details);
    }
    return this.list.page(
      ctx.caller,
      {
        window: { first, after },
        sort: {
          field: orderBy?.field ?? OrderOrderField.CREATED_AT,
          desc: orderBy?.direction === OrderDirection.DESC,
        },
      },
      checked,
    );
  }
}
