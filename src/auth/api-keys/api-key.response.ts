import { ApiProperty, ApiSchema } from '@nestjs/swagger';
import { Role, ROLES } from '../../identity/role.js';

/** An API key in REST bodies (never its secret): the service's `ApiKey` and the schema `ApiKey`. */
@ApiSchema({ name: 'ApiKey' })
export class ApiKeyResponse {
  @ApiProperty({ example: 'key_01JD5Z6K3M8Q2W4E6R8T0Y2U4I' })
  id!: string;

  @ApiProperty({ example: 'usr_01JD5Z6K3M8Q2W4E6R8T0Y2U4I' })
  user_id!: string;

  @ApiProperty({ example: 'dashboard' })
  name!: string;

  @ApiProperty({
    example: 'atr_3kQ9xZ1b',
    description: 'The first characters of the secret, to recognise it.',
  })
  prefix!: string;

  @ApiProperty({ enum: ROLES, enumName: 'Role', example: Role.USER })
  role!: Role;

  @ApiProperty({ type: 'string', format: 'date-time', nullable: true, example: null })
  expires_at!: string | null;

  @ApiProperty({ type: 'string', format: 'date-time', nullable: true, example: null })
  last_used_at!: string | null;

  @ApiProperty({ type: 'string', format: 'date-time', nullable: true, example: null })
  revoked_at!: string | null;

  @ApiProperty({ format: 'date-time', example: '2026-11-23T18:00:00.000Z' })
  created_at!: string;
}

/** `POST /api-keys`: the key with its secret, shown in this response only. */
@ApiSchema({ name: 'CreatedApiKey' })
export class CreatedApiKeyResponse extends ApiKeyResponse {
  @ApiProperty({
    example: 'atr_3kQ9xZ1bV7mN2pL8sD4fG6hJ0kW5eR1t',
    description: 'The secret: send it as `X-API-Key`. Shown once; only its hash is stored.',
  })
  key!: string;
}
