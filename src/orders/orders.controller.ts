import {
  Body,
  Controller,
  Get,
  Headers,
  Param,
  Patch,
  Post,
  Query,
  Req,
  Res,
} from '@nestjs/common';
import { ApiTags } from '@nestjs/swagger';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { Authenticated, CurrentCaller } from '../identity/auth.decorators.js';
import type { Caller } from '../identity/caller.js';
import { Role } from '../identity/role.js';
import { ifMatchHits, resourceEtag, withEtag } from '../http/etag.js';
import { linkHeader } from '../common/list-query.js';
import { restPageOf } from '../database/connection-value.js';
import { PublicUrl } from '../http/public-url.js';
import { ApiDoc, ApiPage, ApiSingle, ApiStandardErrors } from '../common/openapi/decorators.js';

import { CreateOrderBody, UpdateOrderBody } from './dto/order.inputs.js';
import { OrderResponse } from './dto/order.response.js';
import type { Order } from '../domain/order.js';
import { toRestOrder } from './orders.mapper.js';
import { ORDER_LIST_SPEC, OrdersService, type OrderPrecondition } from './orders.service.js';
import { Idempotent } from '../idempotency/idempotent.decorator.js';

/** `If-Match` compared with the ETag a GET of the order would carry. */
function ifMatch(header: string | undefined): OrderPrecondition | undefined {
  return header
    ? (order: Order) => ifMatchHits(header, resourceEtag(toRestOrder(order)))
    : undefined;
}

/**
 * Orders: listed and created under their user, read and changed by id. Any authenticated caller
 * reaches the service, which answers 403 for GUESTs so that the rule lives in one place.
 */
@ApiTags('orders')
@Controller()
export class OrdersController {
  constructor(
    private readonly orders: OrdersService,
    private readonly publicUrl: PublicUrl,
  ) {}

  @Get('users/:id/orders')
  @Authenticated({ role: Role.USER, scopes: ['orders:read'] })
  @ApiDoc('List a user’s orders', 'Your own orders; ADMINs list anyone’s. GUESTs get 403.')
  @ApiPage(OrderResponse, ORDER_LIST_SPEC)
  @ApiStandardErrors('authenticated', { notFound: 'No such user' })
  async list(
    @CurrentCaller() caller: Caller,
    @Param('id') userId: string,
    @Query() query: Record<string, unknown>,
    @Req() req: FastifyRequest,
    @Res({ passthrough: true }) reply: FastifyReply,
  ) {
    const [value] = await this.orders.ordersOfUsers(caller, [userId], { rest: query });
    if (value instanceof Error) {
      throw value;
    }
    const page = await restPageOf(value);
    void reply.header('Link', linkHeader(this.publicUrl.base, req.url, page.meta, page.next));
    return { data: page.data.map(toRestOrder), meta: page.meta };
  }

  @Post('users/:id/orders')
  @Idempotent()
  @Authenticated({ role: Role.USER, scopes: ['orders:write'] })
  @ApiDoc(
    'Place an order for a user',
    'The server computes `total_cents`; the order starts `pending`. Your own user, or anyone’s as ADMIN.',
  )
  @ApiSingle(OrderResponse, { status: 201, location: true })
  @ApiStandardErrors('authenticated-write', { notFound: 'No such user' })
  async create(
    @CurrentCaller() caller: Caller,
    @Param('id') userId: string,
    @Body() body: CreateOrderBody,
    @Res({ passthrough: true }) reply: FastifyReply,
  ) {
    const order = await this.orders.create(caller, userId, {
      currency: body.currency,
      items: body.items.map((i) => ({
        sku: i.sku,
        quantity: i.quantity,
        unitPriceCents: i.unit_price_cents,
      })),
    });
    void reply.code(201).header('Location', `${this.publicUrl.base}/api/v1/orders/${order.id}`);
    return withEtag(reply, toRestOrder(order));
  }

  @Get('orders/:id')
  @Authenticated({ role: Role.USER, scopes: ['orders:read'] })
  @ApiDoc('Get an order')
  @ApiSingle(OrderResponse)
  @ApiStandardErrors('authenticated', { notFound: 'No such order' })
  async get(@CurrentCaller() caller: Caller, @Param('id') id: string) {
    return { data: toRestOrder(await this.orders.get(caller, id)) };
  }

  @Patch('orders/:id')
  @Authenticated({ role: Role.USER, scopes: ['orders:write'] })
  @ApiDoc(
    'Change an order’s status',
    'Allowed transitions: pending → paid → shipped → delivered, pending or paid → cancelled (409 otherwise). Owners may only cancel; ADMINs move orders along. `If-Match` makes it conditional.',
  )
  @ApiSingle(OrderResponse)
  @ApiStandardErrors('authenticated-write', {
    notFound: 'No such order',
    conflict: 'The order cannot move from its current status to this one.',
    precondition: true,
  })
  async update(
    @CurrentCaller() caller: Caller,
    @Param('id') id: string,
    @Body() body: UpdateOrderBody,
    @Res({ passthrough: true }) reply: FastifyReply,
    @Headers('if-match') ifMatchHeader?: string,
  ) {
    return withEtag(
      reply,
      toRestOrder(await this.orders.updateStatus(caller, id, body.status, ifMatch(ifMatchHeader))),
    );
  }
}
