import {
  Args,
  Context,
  Directive,
  ID,
  Int,
  Mutation,
  Parent,
  Query,
  ResolveField,
  Resolver,
} from '@nestjs/graphql';
import type { GqlContext } from '../graphql/context.js';
import type { ConnectionValue, PageValue } from '../database/connection-value.js';
import { NodeRegistry } from '../graphql/node.js';
import type { User } from '../domain/user.js';
import { UserModel } from '../users/user.model.js';
import { userLoader } from '../users/users.loaders.js';
import { UsersService } from '../users/users.service.js';
import { OrderStatus, type Order } from '../domain/order.js';
import { CreateOrderInput, OrderConnection, OrderModel } from './order.model.js';
import { OrdersService } from './orders.service.js';

/** Order queries and mutations; thin: every rule is in OrdersService (CONTRIBUTING.md, house style 1). */
@Resolver(() => OrderModel)
export class OrdersResolver {
  constructor(
    private readonly orders: OrdersService,
    private readonly users: UsersService,
    nodes: NodeRegistry,
  ) {
    nodes.register('order', 'Order', (ctx, id) => this.orders.get(ctx.caller, id));
  }

  @Query(() => OrderModel, {
    nullable: true,
    description:
      'An order: its owner and ADMINs only (FORBIDDEN otherwise, NOT_FOUND when unknown).',
  })
  @Directive('@auth(requires: USER, scopes: ["orders:read"])')
  order(@Args('id', { type: () => ID }) id: string, @Context() ctx: GqlContext): Promise<Order> {
    return this.orders.get(ctx.caller, id);
  }

  @Mutation(() => OrderModel, {
    description: 'A new PENDING order; USER for themself, ADMIN for anyone.',
  })
  @Directive('@auth(requires: USER, scopes: ["orders:write"])')
  createOrder(
    @Args('userId', { type: () => ID }) userId: string,
    @Args('input') input: CreateOrderInput,
    @Context() ctx: GqlContext,
  ): Promise<Order> {
    return this.orders.create(ctx.caller, userId, {
      currency: input.currency,
      items: input.items.map((i) => ({
        sku: i.sku,
        quantity: i.quantity,
        unitPriceCents: i.unitPriceCents,
      })),
    });
  }

  @Mutation(() => OrderModel, {
    description:
      'Moves an order through its state machine (CONFLICT for an invalid transition). ADMIN: any valid ' +
      'transition; USER: cancel their own pending order.',
  })
  @Directive('@auth(requires: USER, scopes: ["orders:write"])')
  updateOrderStatus(
    @Args('id', { type: () => ID }) id: string,
    // `| null` keeps the global validation pipe off the enum (its metadata would be the enum object)
    @Args('status', { type: () => OrderStatus }) status: OrderStatus | null,
    @Context() ctx: GqlContext,
  ): Promise<Order> {
    return this.orders.updateStatus(ctx.caller, id, status as OrderStatus); // non-null in the schema
  }

  @ResolveField('user', () => UserModel, {
    nullable: true,
    description: 'The user who placed the order.',
  })
  user(order: Order, _args: unknown, ctx: GqlContext): Promise<User | undefined> {
    return userLoader(ctx, this.users).load(order.userId);
  }
}

/** `User.orders`: a field of the users' type, resolved here so the order rules stay with orders. */
@Resolver(() => UserModel)
export class UserOrdersResolver {
  constructor(private readonly orders: OrdersService) {}

  @ResolveField('orders', () => OrderConnection, {
    nullable: true,
    description:
      "The user's orders, oldest first. Visible to the user and ADMINs; null with FORBIDDEN for others. " +
      'Batched: one statement for the first page of every user in a list.',
  })
  async userOrders(
    @Parent() user: User,
    @Context() ctx: GqlContext,
    @Args('first', { type: () => Int, nullable: true }) first?: number,
    @Args('after', { type: () => String, nullable: true }) after?: string,
    @Args('status', { type: () => OrderStatus, nullable: true }) statusArg?: OrderStatus | null,
  ): Promise<ConnectionValue<Order>> {
    const status = statusArg ?? undefined;
    // one call of the service for every user of the page (DataLoader): a refused user's error
    // rejects its field only
    const pages = ctx.loaders.get<string, PageValue<Order>>(
      `ordersOfUsers:${first ?? ''}:${after ?? ''}:${status ?? ''}`,
      (ids) =>
        this.orders.ordersOfUsers(
          ctx.caller,
          ids,
          { window: { first, after }, sort: { field: 'created_at', desc: false } },
          { status },
        ),
    );
    return pages.load(user.id);
  }
}
