import { Args, Context, Directive, ID, Int, Mutation, Query, Resolver } from '@nestjs/graphql';
import type { Caller } from '../identity/caller.js';
import { Unauthorized } from '../common/errors.js';
import type { GqlContext } from '../graphql/context.js';
import { CreateWebhookEndpointInput, UpdateWebhookEndpointInput } from './dto/webhook.inputs.js';
import type { WebhookDeliveryResponse, WebhookEndpointResponse } from './dto/webhook.responses.js';
import {
  CreatedWebhookEndpointModel,
  WebhookDeliveryModel,
  WebhookDeliveryPageModel,
  WebhookEndpointModel,
} from './webhook.model.js';
import { WebhooksService } from './webhooks.service.js';

function endpointModel(e: WebhookEndpointResponse): WebhookEndpointModel {
  return {
    id: e.id,
    url: e.url,
    description: e.description,
    events: e.events,
    oauthClientId: e.oauth_client_id,
    active: e.active,
    disabledReason: e.disabled_reason,
    createdAt: e.created_at,
    updatedAt: e.updated_at,
  };
}

function deliveryModel(d: WebhookDeliveryResponse): WebhookDeliveryModel {
  return {
    id: d.id,
    eventId: d.event_id,
    type: d.type,
    status: d.status,
    attempts: d.attempts,
    lastStatusCode: d.last_status_code,
    lastDurationMs: d.last_duration_ms,
    lastError: d.last_error,
    nextAttemptAt: d.next_attempt_at,
    createdAt: d.created_at,
  };
}

function callerOf(ctx: GqlContext): Caller {
  if (!ctx.caller) {
    throw Unauthorized();
  }
  return ctx.caller;
}

/** Webhook endpoints and deliveries in GraphQL: the same WebhooksService methods as REST. */
@Resolver(() => WebhookEndpointModel)
export class WebhooksResolver {
  constructor(private readonly webhooks: WebhooksService) {}

  @Query(() => [WebhookEndpointModel], {
    nullable: true,
    description:
      'Webhook endpoints, oldest first (at most 100). Requires the ADMIN role; not available to partner apps (OAuth tokens).',
  })
  @Directive('@auth(requires: ADMIN)')
  async webhookEndpoints(@Context() ctx: GqlContext): Promise<WebhookEndpointModel[]> {
    const page = await this.webhooks.listEndpoints(callerOf(ctx), { limit: '100' });
    return page.data.map(endpointModel);
  }

  @Query(() => WebhookEndpointModel, {
    nullable: true,
    description:
      'One webhook endpoint (NOT_FOUND when unknown). Requires the ADMIN role; not available to partner apps (OAuth tokens).',
  })
  @Directive('@auth(requires: ADMIN)')
  async webhookEndpoint(
    @Args('id', { type: () => ID }) id: string,
    @Context() ctx: GqlContext,
  ): Promise<WebhookEndpointModel> {
    return endpointModel(await this.webhooks.getEndpoint(callerOf(ctx), id));
  }

  @Query(() => WebhookDeliveryPageModel, {
    nullable: true,
    description:
      'The delivery log of an endpoint, newest first. Requires the ADMIN role; not available to partner apps (OAuth tokens).',
  })
  @Directive('@auth(requires: ADMIN)')
  async webhookDeliveries(
    @Args('endpointId', { type: () => ID }) endpointId: string,
    @Args('first', { type: () => Int, nullable: true, defaultValue: 20 }) first: number,
    @Args('after', { type: () => String, nullable: true }) after: string | null,
    @Context() ctx: GqlContext,
  ): Promise<WebhookDeliveryPageModel> {
    const query: Record<string, unknown> = { limit: String(first) };
    if (after) {
      query.cursor = after;
    }
    const page = await this.webhooks.listDeliveries(callerOf(ctx), endpointId, query);
    // the page's own wire shape (not a connection): endCursor is the next page's cursor
    const hasNextPage = await page.pageInfo.hasNextPage;
    return {
      nodes: page.nodes.map(deliveryModel),
      endCursor: hasNextPage ? page.pageInfo.endCursor : null,
      hasNextPage,
      totalCount: await page.totalCount,
    };
  }

  @Mutation(() => CreatedWebhookEndpointModel, {
    nullable: true,
    description:
      'Registers a webhook endpoint; the signing secret is in this answer only. Requires the ADMIN role; not available to partner apps (OAuth tokens).',
  })
  @Directive('@auth(requires: ADMIN)')
  async createWebhookEndpoint(
    @Args('input') input: CreateWebhookEndpointInput,
    @Context() ctx: GqlContext,
  ): Promise<CreatedWebhookEndpointModel> {
    const created = await this.webhooks.createEndpoint(callerOf(ctx), input);
    return { endpoint: endpointModel(created), secret: created.secret };
  }

  @Mutation(() => WebhookEndpointModel, {
    nullable: true,
    description:
      'Changes a webhook endpoint (url, events, description, active). Requires the ADMIN role; not available to partner apps (OAuth tokens).',
  })
  @Directive('@auth(requires: ADMIN)')
  async updateWebhookEndpoint(
    @Args('id', { type: () => ID }) id: string,
    @Args('input') input: UpdateWebhookEndpointInput,
    @Context() ctx: GqlContext,
  ): Promise<WebhookEndpointModel> {
    return endpointModel(await this.webhooks.updateEndpoint(callerOf(ctx), id, input));
  }

  @Mutation(() => Boolean, {
    nullable: true,
    description:
      'Deletes a webhook endpoint and its delivery log. Requires the ADMIN role; not available to partner apps (OAuth tokens).',
  })
  @Directive('@auth(requires: ADMIN)')
  async deleteWebhookEndpoint(
    @Args('id', { type: () => ID }) id: string,
    @Context() ctx: GqlContext,
  ): Promise<boolean> {
    await this.webhooks.deleteEndpoint(callerOf(ctx), id);
    return true;
  }
}
