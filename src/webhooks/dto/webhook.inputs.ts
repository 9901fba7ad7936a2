import { Field, InputType } from '@nestjs/graphql';
import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import {
  ArrayMaxSize,
  ArrayMinSize,
  IsArray,
  IsBoolean,
  IsIn,
  IsOptional,
  IsString,
  MaxLength,
} from 'class-validator';
import { WEBHOOK_EVENT_TYPES } from '../../outbox/webhook-types.js';

const EVENTS_DOC = {
  type: 'array' as const,
  items: { type: 'string' as const, enum: [...WEBHOOK_EVENT_TYPES] },
  minItems: 1,
  example: ['order.created', 'order.status_changed'],
  description: 'The event types to receive (`ping` is sent on request whatever this lists)',
};

@InputType('CreateWebhookEndpointInput')
export class CreateWebhookEndpointInput {
  @ApiProperty({
    maxLength: 2048,
    example: 'https://hooks.acme.example/atrium',
    description:
      'https only; a host resolving to a loopback, private, link-local, shared (CGNAT) or metadata address is refused',
  })
  @Field()
  @IsString()
  @MaxLength(2048)
  url!: string;

  @ApiProperty(EVENTS_DOC)
  @Field(() => [String])
  @IsArray()
  @ArrayMinSize(1)
  @ArrayMaxSize(WEBHOOK_EVENT_TYPES.length)
  @IsIn(WEBHOOK_EVENT_TYPES, {
    each: true,
    message: `each event must be one of ${WEBHOOK_EVENT_TYPES.join(', ')}`,
  })
  events!: string[];

  @ApiPropertyOptional({ maxLength: 500, example: 'Invoicing sync' })
  @Field(() => String, { nullable: true })
  @IsOptional()
  @IsString()
  @MaxLength(500)
  description?: string;

  @ApiPropertyOptional({
    example: 'cli_01JD5Z6K3M8Q2W4E6R8T0Y2U4I',
    description:
      'Bind the endpoint to a partner app: it then receives only events about users who granted that app, and only types its scopes can read',
  })
  @Field(() => String, { nullable: true })
  @IsOptional()
  @IsString()
  @MaxLength(64)
  oauth_client_id?: string;
}

@InputType('UpdateWebhookEndpointInput')
export class UpdateWebhookEndpointInput {
  @ApiPropertyOptional({ maxLength: 2048, example: 'https://hooks.acme.example/atrium' })
  @Field(() => String, { nullable: true })
  @IsOptional()
  @IsString()
  @MaxLength(2048)
  url?: string;

  @ApiPropertyOptional(EVENTS_DOC)
  @Field(() => [String], { nullable: true })
  @IsOptional()
  @IsArray()
  @ArrayMinSize(1)
  @ArrayMaxSize(WEBHOOK_EVENT_TYPES.length)
  @IsIn(WEBHOOK_EVENT_TYPES, {
    each: true,
    message: `each event must be one of ${WEBHOOK_EVENT_TYPES.join(', ')}`,
  })
  events?: string[];

  @ApiPropertyOptional({
    example: true,
    description:
      'false disables the endpoint (its pending deliveries fail); true enables it again and clears `disabled_reason`',
  })
  @Field(() => Boolean, { nullable: true })
  @IsOptional()
  @IsBoolean()
  active?: boolean;

  @ApiPropertyOptional({ maxLength: 500, example: 'Invoicing sync' })
  @Field(() => String, { nullable: true })
  @IsOptional()
  @IsString()
  @MaxLength(500)
  description?: string;
}
