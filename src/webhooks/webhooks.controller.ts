import {
  Body,
  Controller,
  Delete,
  Get,
  Headers,
  HttpCode,
  Param,
  Patch,
  Post,
  Query,
  Req,
  Res,
} from '@nestjs/common';
import { ApiTags } from '@nestjs/swagger';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { Authenticated, CurrentCaller, FIRST_PARTY_ONLY } from '../identity/auth.decorators.js';
import type { Caller } from '../identity/caller.js';
import { Role } from '../identity/role.js';
import { linkHeader } from '../common/list-query.js';
import { restPageOf } from '../database/connection-value.js';
import {
  ApiDoc,
  ApiNoContent,
  ApiPage,
  ApiSingle,
  ApiStandardErrors,
} from '../common/openapi/decorators.js';
import { PublicUrl } from '../http/public-url.js';
import { ifMatchPrecondition, withEtag } from '../http/etag.js';
import { CreateWebhookEndpointInput, UpdateWebhookEndpointInput } from './dto/webhook.inputs.js';
import {
  WebhookDeliveryResponse,
  WebhookEndpointCreatedResponse,
  WebhookEndpointResponse,
  WebhookEndpointWithSecretResponse,
} from './dto/webhook.responses.js';
import { Idempotent } from '../idempotency/idempotent.decorator.js';
import {
  WEBHOOK_DELIVERY_LIST_SPEC,
  WEBHOOK_LIST_SPEC,
  WebhooksService,
} from './webhooks.service.js';
import { ApiResponse } from '@nestjs/swagger';
import { getSchemaPath } from '@nestjs/swagger';

const ADMIN = { role: Role.ADMIN, scopes: FIRST_PARTY_ONLY } as const;

/**
 * What an Idempotency-Key replay of POST /webhooks answers: the same endpoint without its secret
 * (the replay record never holds the secret; the first answer showed it once).
 */
function withoutSecret(body: string): string {
  const parsed = JSON.parse(body) as { data?: { secret?: unknown } };
  if (parsed.data && 'secret' in parsed.data) {
    parsed.data.secret = null;
  }
  return JSON.stringify(parsed);
}
const NO_ENDPOINT = 'No such webhook endpoint';

/** 202: the attempt is queued; the body is its delivery row. */
const ApiAccepted = (description: string) =>
  ApiResponse({
    status: 202,
    description,
    schema: {
      type: 'object',
      required: ['data'],
      properties: { data: { $ref: getSchemaPath(WebhookDeliveryResponse) } },
    },
  });

/** Webhook endpoints and their delivery log (ADMIN; docs/webhooks.md). */
@ApiTags('webhooks')
@Controller('webhooks')
export class WebhooksController {
  constructor(
    private readonly webhooks: WebhooksService,
    private readonly publicUrl: PublicUrl,
  ) {}

  @Post()
  @Authenticated(ADMIN)
  @ApiDoc(
    'Register a webhook endpoint (ADMIN)',
    'The signing `secret` is in this response only (an `Idempotency-Key` replay answers the same endpoint with `secret: null`: the secret is never stored for it). A URL that is not https, or whose host resolves to a loopback, private, link-local, shared or metadata address, is refused (422).',
  )
  @ApiSingle(WebhookEndpointCreatedResponse, { status: 201, location: true })
  @ApiStandardErrors('authenticated-write')
  @Idempotent({ storedBody: withoutSecret })
  async create(
    @CurrentCaller() caller: Caller,
    @Body() input: CreateWebhookEndpointInput,
    @Res({ passthrough: true }) reply: FastifyReply,
  ) {
    const endpoint = await this.webhooks.createEndpoint(caller, input);
    void reply
      .code(201)
      .header('Location', `${this.publicUrl.base}/api/v1/webhooks/${endpoint.id}`)
      .header('Cache-Control', 'no-store');
    return { data: endpoint };
  }

  @Get()
  @Authenticated(ADMIN)
  @ApiDoc('List webhook endpoints (ADMIN)')
  @ApiPage(WebhookEndpointResponse, WEBHOOK_LIST_SPEC)
  @ApiStandardErrors('authenticated')
  async list(
    @CurrentCaller() caller: Caller,
    @Query() query: Record<string, unknown>,
    @Req() req: FastifyRequest,
    @Res({ passthrough: true }) reply: FastifyReply,
  ) {
    const page = await this.webhooks.listEndpoints(caller, query);
    void reply.header('Link', linkHeader(this.publicUrl.base, req.url, page.meta, page.next));
    return { data: page.data, meta: page.meta };
  }

  @Get(':id')
  @Authenticated(ADMIN)
  @ApiDoc('One webhook endpoint (ADMIN)')
  @ApiSingle(WebhookEndpointResponse)
  @ApiStandardErrors('authenticated', { notFound: NO_ENDPOINT })
  async get(@CurrentCaller() caller: Caller, @Param('id') id: string) {
    return { data: await this.webhooks.getEndpoint(caller, id) };
  }

  @Patch(':id')
  @Authenticated(ADMIN)
  @ApiDoc(
    'Change a webhook endpoint (ADMIN)',
    '`url`, `events`, `description`, `active`. `active: true` enables a disabled endpoint again. `If-Match` makes it conditional.',
  )
  @ApiSingle(WebhookEndpointResponse)
  @ApiStandardErrors('authenticated-write', { notFound: NO_ENDPOINT, precondition: true })
  async update(
    @CurrentCaller() caller: Caller,
    @Param('id') id: string,
    @Body() input: UpdateWebhookEndpointInput,
    @Res({ passthrough: true }) reply: FastifyReply,
    @Headers('if-match') ifMatchHeader?: string,
  ) {
    const endpoint = await this.webhooks.updateEndpoint(
      caller,
      id,
      input,
      ifMatchPrecondition(ifMatchHeader),
    );
    return withEtag(reply, endpoint);
  }

  @Delete(':id')
  @Authenticated(ADMIN)
  @HttpCode(204)
  @ApiDoc(
    'Delete a webhook endpoint and its delivery log (ADMIN)',
    '`If-Match` makes it conditional.',
  )
  @ApiNoContent('Deleted')
  @ApiStandardErrors('authenticated', { notFound: NO_ENDPOINT, precondition: true })
  async delete(
    @CurrentCaller() caller: Caller,
    @Param('id') id: string,
    @Headers('if-match') ifMatchHeader?: string,
  ): Promise<void> {
    await this.webhooks.deleteEndpoint(caller, id, ifMatchPrecondition(ifMatchHeader));
  }

  @Post(':id/secret')
  @Authenticated(ADMIN)
  @HttpCode(200)
  @ApiDoc(
    'Rotate the signing secret (ADMIN)',
    'Returns the new secret once; the previous secret also signs every delivery for 24 hours (`previous_secret_expires_at`).',
  )
  @ApiSingle(WebhookEndpointWithSecretResponse)
  @ApiStandardErrors('authenticated', { notFound: NO_ENDPOINT })
  async rotateSecret(
    @CurrentCaller() caller: Caller,
    @Param('id') id: string,
    @Res({ passthrough: true }) reply: FastifyReply,
  ) {
    void reply.header('Cache-Control', 'no-store');
    return { data: await this.webhooks.rotateSecret(caller, id) };
  }

  @Post(':id/ping')
  @Authenticated(ADMIN)
  @HttpCode(202)
  @ApiDoc(
    'Send a ping event (ADMIN)',
    'Queues a `ping` to this endpoint whatever its `events`; the answer is the delivery to follow in the log.',
  )
  @ApiAccepted('Queued')
  @ApiStandardErrors('authenticated', { notFound: NO_ENDPOINT })
  async ping(@CurrentCaller() caller: Caller, @Param('id') id: string) {
    return { data: await this.webhooks.ping(caller, id) };
  }

  @Get(':id/deliveries')
  @Authenticated(ADMIN)
  @ApiDoc(
    'The delivery log of an endpoint (ADMIN)',
    'Newest first: status, attempts, the last response status and duration, the next attempt.',
  )
  @ApiPage(WebhookDeliveryResponse, WEBHOOK_DELIVERY_LIST_SPEC)
  @ApiStandardErrors('authenticated', { notFound: NO_ENDPOINT })
  async deliveries(
    @CurrentCaller() caller: Caller,
    @Param('id') id: string,
    @Query() query: Record<string, unknown>,
    @Req() req: FastifyRequest,
    @Res({ passthrough: true }) reply: FastifyReply,
  ) {
    const page = await restPageOf(await this.webhooks.listDeliveries(caller, id, query));
    void reply.header('Link', linkHeader(this.publicUrl.base, req.url, page.meta, page.next));
    return { data: page.data, meta: page.meta };
  }

  @Post(':id/deliveries/:delivery_id/redeliver')
  @Authenticated(ADMIN)
  @HttpCode(202)
  @ApiDoc(
    'Deliver an event again (ADMIN)',
    'A new delivery of the same event, with the same `webhook-id`, sent now.',
  )
  @ApiAccepted('Queued')
  @ApiStandardErrors('authenticated', { notFound: 'No such webhook endpoint or delivery' })
  async redeliver(
    @CurrentCaller() caller: Caller,
    @Param('id') id: string,
    @Param('delivery_id') deliveryId: string,
  ) {
    return { data: await this.webhooks.redeliver(caller, id, deliveryId) };
  }
}
