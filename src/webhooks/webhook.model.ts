import { Field, ID, Int, ObjectType } from '@nestjs/graphql';

/** A webhook endpoint in GraphQL (no `@auth(scopes:)`: partner apps never read it, as in REST). */
@ObjectType('WebhookEndpoint', {
  description: 'A webhook endpoint (ADMIN; not available to partner apps).',
})
export class WebhookEndpointModel {
  @Field(() => ID)
  id!: string;

  @Field()
  url!: string;

  @Field(() => String, { nullable: true })
  description!: string | null;

  @Field(() => [String])
  events!: string[];

  @Field(() => String, { nullable: true })
  oauthClientId!: string | null;

  @Field()
  active!: boolean;

  @Field(() => String, { nullable: true })
  disabledReason!: string | null;

  @Field()
  createdAt!: string;

  @Field()
  updatedAt!: string;
}

@ObjectType('CreatedWebhookEndpoint', {
  description:
    'A new webhook endpoint with its signing secret (shown once; not available to partner apps).',
})
export class CreatedWebhookEndpointModel {
  @Field(() => WebhookEndpointModel)
  endpoint!: WebhookEndpointModel;

  @Field()
  secret!: string;
}

@ObjectType('WebhookDelivery', {
  description: 'One event sent (or to send) to one endpoint (not available to partner apps).',
})
export class WebhookDeliveryModel {
  @Field(() => ID)
  id!: string;

  @Field(() => ID, { description: 'Sent as `webhook-id`.' })
  eventId!: string;

  @Field()
  type!: string;

  @Field({ description: 'pending, succeeded or failed' })
  status!: string;

  @Field(() => Int)
  attempts!: number;

  @Field(() => Int, { nullable: true })
  lastStatusCode!: number | null;

  @Field(() => Int, { nullable: true })
  lastDurationMs!: number | null;

  @Field(() => String, { nullable: true })
  lastError!: string | null;

  @Field(() => String, { nullable: true })
  nextAttemptAt!: string | null;

  @Field()
  createdAt!: string;
}

@ObjectType('WebhookDeliveryPage', {
  description:
    'A page of the delivery log, newest first; pass `endCursor` as `after` for the next (not available to partner apps).',
})
export class WebhookDeliveryPageModel {
  @Field(() => [WebhookDeliveryModel])
  nodes!: WebhookDeliveryModel[];

  @Field(() => String, { nullable: true })
  endCursor!: string | null;

  @Field()
  hasNextPage!: boolean;

  @Field(() => Int)
  totalCount!: number;
}
