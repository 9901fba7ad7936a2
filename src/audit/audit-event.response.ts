import { ApiProperty, ApiSchema } from '@nestjs/swagger';
import { ACTOR_TYPES, AUDIT_ACTIONS, type ActorType, type AuditAction } from './audit-event.js';

@ApiSchema({ name: 'AuditActor' })
export class AuditActorResponse {
  @ApiProperty({ enum: ACTOR_TYPES, example: 'user' })
  type!: ActorType;

  @ApiProperty({
    type: 'string',
    nullable: true,
    example: 'usr_01JD5Z6K3M8Q2W4E6R8T0Y2U4I',
    description: 'The user, API key or OAuth client id; null for `system`.',
  })
  id!: string | null;
}

@ApiSchema({ name: 'AuditTarget' })
export class AuditTargetResponse {
  @ApiProperty({ example: 'user', description: '`user`, `api_key`, `oauth_client` or `order`.' })
  type!: string;

  @ApiProperty({ example: 'usr_01JD5Z6K3M8Q2W4E6R8T0Y2U4I' })
  id!: string;
}

/** An audit entry (docs/admin.md "Audit log"). */
@ApiSchema({ name: 'AuditEvent' })
export class AuditEventResponse {
  @ApiProperty({ example: 'aud_01JD5Z6K3M8Q2W4E6R8T0Y2U4I' })
  id!: string;

  @ApiProperty({ type: 'string', format: 'date-time' })
  at!: string;

  @ApiProperty({ type: () => AuditActorResponse })
  actor!: AuditActorResponse;

  @ApiProperty({
    type: 'string',
    nullable: true,
    description: 'The user an OAuth access token acts for; null otherwise.',
  })
  on_behalf_of!: string | null;

  @ApiProperty({ enum: AUDIT_ACTIONS, example: 'user.role_changed' })
  action!: AuditAction;

  @ApiProperty({ type: () => AuditTargetResponse })
  target!: AuditTargetResponse;

  @ApiProperty({
    type: 'object',
    additionalProperties: { type: 'array', minItems: 2, maxItems: 2, items: {} },
    example: { role: ['USER', 'ADMIN'] },
    description:
      '`{member: [old, new]}` in REST member names and values; never a secret or a hash.',
  })
  changes!: Record<string, [unknown, unknown]>;

  @ApiProperty({
    type: 'string',
    nullable: true,
    description: 'The `X-Request-Id` of the response to the request that made the change.',
  })
  request_id!: string | null;

  @ApiProperty({ type: 'string', nullable: true, description: 'The client address.' })
  ip!: string | null;
}
