import { ApiProperty, ApiPropertyOptional, ApiSchema } from '@nestjs/swagger';
import { DELIVERY_STATUSES, WEBHOOK_EVENT_TYPES } from '../../outbox/webhook-types.js';

@ApiSchema({ name: 'WebhookEndpoint' })
export class WebhookEndpointResponse {
  @ApiProperty({ example: 'whk_01JD5Z6K3M8Q2W4E6R8T0Y2U4I' })
  id!: string;

  @ApiProperty({ example: 'https://hooks.acme.example/atrium' })
  url!: string;

  @ApiProperty({ type: String, nullable: true, example: 'Invoicing sync' })
  description!: string | null;

  @ApiProperty({
    type: 'array',
    items: { type: 'string', enum: [...WEBHOOK_EVENT_TYPES] },
    example: ['order.created'],
  })
  events!: string[];

  @ApiProperty({ type: String, nullable: true, example: null })
  oauth_client_id!: string | null;

  @ApiProperty({ example: true })
  active!: boolean;

  @ApiProperty({
    type: String,
    nullable: true,
    example: null,
    description: 'Why the service disabled the endpoint (410 Gone, or failures for too long)',
  })
  disabled_reason!: string | null;

  @ApiProperty({ format: 'date-time', example: '2026-11-23T18:00:00.000Z' })
  created_at!: string;

  @ApiProperty({ format: 'date-time', example: '2026-11-23T18:00:00.000Z' })
  updated_at!: string;
}

@ApiSchema({ name: 'WebhookEndpointWithSecret' })
/** The answer of POST /webhooks: the secret once, `null` in an Idempotency-Key replay. */
export class WebhookEndpointCreatedResponse extends WebhookEndpointResponse {
  @ApiProperty({
    type: String,
    nullable: true,
    example: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
    description:
      'The signing secret, shown in this response only: `null` when the response is an `Idempotency-Key` replay (`Idempotent-Replayed: true`), which never stores it',
  })
  secret!: string | null;
}

export class WebhookEndpointWithSecretResponse extends WebhookEndpointResponse {
  @ApiProperty({
    example: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
    description: 'The signing secret, shown in this response only',
  })
  secret!: string;

  @ApiPropertyOptional({
    type: String,
    nullable: true,
    format: 'date-time',
    description: 'After a rotation: until when the previous secret also signs',
  })
  previous_secret_expires_at?: string | null;
}

@ApiSchema({ name: 'WebhookDelivery' })
export class WebhookDeliveryResponse {
  @ApiProperty({ example: 'dlv_01JD5Z6K3M8Q2W4E6R8T0Y2U4I' })
  id!: string;

  @ApiProperty({ example: 'evt_01JD5Z6K3M8Q2W4E6R8T0Y2U4I', description: 'Sent as `webhook-id`' })
  event_id!: string;

  @ApiProperty({ enum: [...WEBHOOK_EVENT_TYPES, 'ping'], example: 'order.created' })
  type!: string;

  @ApiProperty({ enum: DELIVERY_STATUSES, example: 'succeeded' })
  status!: string;

  @ApiProperty({ example: 1 })
  attempts!: number;

  @ApiProperty({ type: Number, nullable: true, example: 200 })
  last_status_code!: number | null;

  @ApiProperty({ type: Number, nullable: true, example: 42 })
  last_duration_ms!: number | null;

  @ApiProperty({
    type: String,
    nullable: true,
    example: null,
    description:
      'Why the last attempt failed when no status explains it (timeout, refused address)',
  })
  last_error!: string | null;

  @ApiProperty({ type: String, nullable: true, format: 'date-time', example: null })
  next_attempt_at!: string | null;

  @ApiProperty({ format: 'date-time', example: '2026-11-23T18:00:00.000Z' })
  created_at!: string;
}
