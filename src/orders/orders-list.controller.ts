import { Controller, Get, Query, Req, Res } from '@nestjs/common';
import { ApiTags } from '@nestjs/swagger';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { Authenticated, CurrentCaller } from '../identity/auth.decorators.js';
import type { Caller } from '../identity/caller.js';
import { Role } from '../identity/role.js';
import { exportType, sendExport } from '../common/export-stream.js';
import { linkHeader } from '../common/list-query.js';
import { restPageOf } from '../database/connection-value.js';
import { ApiDoc, ApiExport, ApiPage, ApiStandardErrors } from '../common/openapi/decorators.js';
import { PublicUrl } from '../http/public-url.js';
import { EXPORT_COST } from '../rate-limit/list-cost.js';
import { OrderResponse } from './dto/order.response.js';
import { ORDERS_ALL_LIST_SPEC, OrdersListService } from './orders-list.service.js';
import { toRestOrder } from './orders.mapper.js';
import { orderFromRow } from './orders.row.js';

const ORDER_EXPORT_COLUMNS = [
  'id',
  'user_id',
  'status',
  'items',
  'total_cents',
  'currency',
  'created_at',
  'updated_at',
] as const;

/** The orders list across users and its export (docs/admin.md). */
@ApiTags('orders')
@Controller('orders')
export class OrdersListController {
  constructor(
    private readonly orders: OrdersListService,
    private readonly publicUrl: PublicUrl,
  ) {}

  @Get()
  @Authenticated({ role: Role.USER, scopes: ['orders:read'] })
  @ApiDoc(
    'List orders across users',
    'ADMINs list every order (of live users); a USER lists their own, and naming another `user_id` is 403. GUESTs get 403. `created_after` is strictly later, `created_before` up to and including; the total bounds are inclusive.',
  )
  @ApiPage(OrderResponse, ORDERS_ALL_LIST_SPEC)
  @ApiStandardErrors('authenticated', {
    forbidden:
      'A GUEST, a USER naming another user’s `user_id`, or an OAuth token without `orders:read`.',
  })
  async list(
    @CurrentCaller() caller: Caller,
    @Query() query: Record<string, unknown>,
    @Req() req: FastifyRequest,
    @Res({ passthrough: true }) reply: FastifyReply,
  ) {
    const page = await restPageOf(await this.orders.page(caller, { rest: query }));
    void reply.header('Link', linkHeader(this.publicUrl.base, req.url, page.meta, page.next));
    return { data: page.data.map(toRestOrder), meta: page.meta };
  }

  @Get('export')
  @Authenticated({ role: Role.ADMIN, scopes: ['orders:read'] })
  @ApiDoc(
    'Export orders (ADMIN)',
    'Every order the list would show with the same filters and sort, streamed as NDJSON (default) or CSV.',
  )
  @ApiExport(OrderResponse, ORDERS_ALL_LIST_SPEC, EXPORT_COST)
  async export(
    @CurrentCaller() caller: Caller,
    @Query() query: Record<string, unknown>,
    @Res() reply: FastifyReply,
  ) {
    // `Accept` is optional (NDJSON by default): read here, not declared as a required header
    const type = exportType(reply.request.headers.accept);
    const batches = await this.orders.exportRows(caller, query);
    return sendExport(reply, type, 'orders', ORDER_EXPORT_COLUMNS, batches, (row) =>
      toRestOrder(orderFromRow(row)),
    );
  }
}
