import { ApiProperty, ApiPropertyOptional, ApiSchema } from '@nestjs/swagger';
import { ALL_SCOPES } from '../../identity/scopes.js';

/** A partner app in REST bodies (`client_secret` only on creation) and the schema `OAuthClient`. */
@ApiSchema({ name: 'OAuthClient' })
export class OAuthClientResponse {
  @ApiProperty({ example: 'cli_01JD5Z6K3M8Q2W4E6R8T0Y2U4I' })
  client_id!: string;

  @ApiProperty({ example: 'Acme invoicing' })
  name!: string;

  @ApiProperty({ type: [String], format: 'uri', example: ['https://app.acme.example/callback'] })
  redirect_uris!: string[];

  @ApiProperty({
    type: 'array',
    items: { type: 'string', enum: [...ALL_SCOPES] },
    example: ['openid', 'users:read'],
  })
  scopes!: string[];

  @ApiProperty({ example: false, description: 'A public client (no secret; PKCE only).' })
  public!: boolean;

  @ApiProperty({
    type: 'string',
    nullable: true,
    format: 'uri',
    example: 'https://app.acme.example/logo.png',
    description: 'Shown on the consent page',
  })
  logo_uri!: string | null;

  @ApiProperty({
    type: 'string',
    nullable: true,
    format: 'uri',
    example: 'https://app.acme.example',
  })
  client_uri!: string | null;

  @ApiProperty({
    type: 'string',
    nullable: true,
    format: 'uri',
    example: 'https://app.acme.example/privacy',
  })
  policy_uri!: string | null;

  @ApiProperty({
    type: 'string',
    nullable: true,
    format: 'uri',
    example: 'https://app.acme.example/terms',
  })
  tos_uri!: string | null;

  @ApiProperty({ format: 'date-time', example: '2026-11-23T18:00:00.000Z' })
  created_at!: string;

  @ApiProperty({
    format: 'date-time',
    example: '2026-11-24T09:30:00.000Z',
    description: 'Last edit or secret rotation (created_at until then)',
  })
  updated_at!: string;
}

/**
 * `POST /oauth/clients` and `POST /oauth/clients/{client_id}/secret`: a confidential client's
 * secret is in this response only.
 */
@ApiSchema({ name: 'CreatedOAuthClient' })
export class CreatedOAuthClientResponse extends OAuthClientResponse {
  @ApiPropertyOptional({
    example: 'acs_Jm2X1kQ9vB7nR4tW8yZ0pL3sD6fG5hK',
    description: 'Confidential clients only; shown once.',
  })
  client_secret?: string;
}

/** One app the user authorized, as `GET /oauth/grants` lists it (schema `AuthorizedApp`). */
@ApiSchema({ name: 'AuthorizedApp' })
export class AuthorizedAppResponse {
  @ApiProperty({ example: 'cli_01JD5Z6K3M8Q2W4E6R8T0Y2U4I' })
  client_id!: string;

  @ApiProperty({ example: 'Acme invoicing' })
  client_name!: string;

  @ApiProperty({ type: [String], example: ['openid', 'users:read'] })
  scopes!: string[];

  @ApiProperty({ format: 'date-time', example: '2026-11-23T18:00:00.000Z' })
  granted_at!: string;
}
