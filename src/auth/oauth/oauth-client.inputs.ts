import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import {
  ArrayMaxSize,
  ArrayMinSize,
  IsArray,
  IsBoolean,
  IsIn,
  IsOptional,
  IsString,
  Length,
  MaxLength,
} from 'class-validator';
import { ALL_SCOPES } from '../../identity/scopes.js';

const trim = ({ value }: { value: unknown }) => (typeof value === 'string' ? value.trim() : value);

/** The branding members (consent page): https URLs, or null to remove one. */
export class OAuthClientBranding {
  @ApiPropertyOptional({
    type: 'string',
    nullable: true,
    format: 'uri',
    maxLength: 2000,
    example: 'https://app.acme.example/logo.png',
    description:
      'An https image shown on the consent page (loaded by the user\u2019s browser); null removes it',
  })
  @IsOptional()
  @IsString()
  @MaxLength(2000)
  logo_uri?: string | null;

  @ApiPropertyOptional({
    type: 'string',
    nullable: true,
    format: 'uri',
    maxLength: 2000,
    example: 'https://app.acme.example',
    description: 'The app\u2019s home page (https), linked on the consent page; null removes it',
  })
  @IsOptional()
  @IsString()
  @MaxLength(2000)
  client_uri?: string | null;

  @ApiPropertyOptional({
    type: 'string',
    nullable: true,
    format: 'uri',
    maxLength: 2000,
    example: 'https://app.acme.example/privacy',
    description:
      'The app\u2019s privacy policy (https), linked on the consent page; null removes it',
  })
  @IsOptional()
  @IsString()
  @MaxLength(2000)
  policy_uri?: string | null;

  @ApiPropertyOptional({
    type: 'string',
    nullable: true,
    format: 'uri',
    maxLength: 2000,
    example: 'https://app.acme.example/terms',
    description:
      'The app\u2019s terms of service (https), linked on the consent page; null removes it',
  })
  @IsOptional()
  @IsString()
  @MaxLength(2000)
  tos_uri?: string | null;
}

export class CreateOAuthClientInput extends OAuthClientBranding {
  @ApiProperty({ minLength: 1, maxLength: 100, example: 'Acme invoicing' })
  @Transform(({ value }: { value: unknown }) => (typeof value === 'string' ? value.trim() : value))
  @IsString()
  @Length(1, 100)
  name!: string;

  @ApiProperty({
    type: 'array',
    items: { type: 'string', minLength: 1, maxLength: 2000 },
    minItems: 1,
    maxItems: 10,
    example: ['https://app.acme.example/callback'],
    description:
      'Absolute URIs compared as exact strings: https, or http on a loopback host (127.0.0.1, [::1], localhost); no fragment',
  })
  @IsArray()
  @ArrayMinSize(1)
  @ArrayMaxSize(10)
  @IsString({ each: true })
  @MaxLength(2000, { each: true })
  redirect_uris!: string[];

  @ApiProperty({
    type: [String],
    enum: ALL_SCOPES,
    minItems: 1,
    example: ['openid', 'profile', 'users:read', 'offline_access'],
    description: 'The scopes this client may ask for',
  })
  @IsArray()
  @ArrayMinSize(1)
  @IsIn(ALL_SCOPES, { each: true, message: `each scope must be one of ${ALL_SCOPES.join(', ')}` })
  scopes!: string[];

  @ApiPropertyOptional({
    description:
      'true: a public client (no secret: browser or native app); false or omitted: confidential',
  })
  @IsOptional()
  @IsBoolean()
  public?: boolean;
}

/**
 * `PATCH /oauth/clients/{client_id}`: only the members sent change. Narrowing `scopes` ends the
 * refresh tokens, codes and access tokens that carry a dropped scope.
 */
export class UpdateOAuthClientInput extends OAuthClientBranding {
  @ApiPropertyOptional({ minLength: 1, maxLength: 100, example: 'Acme invoicing' })
  @IsOptional()
  @Transform(trim)
  @IsString()
  @Length(1, 100)
  name?: string;

  @ApiPropertyOptional({
    type: 'array',
    items: { type: 'string', minLength: 1, maxLength: 2000 },
    minItems: 1,
    maxItems: 10,
    example: ['https://app.acme.example/callback', 'https://app.acme.example/callback2'],
    description: 'Replaces the registered list (same rules as on registration)',
  })
  @IsOptional()
  @IsArray()
  @ArrayMinSize(1)
  @ArrayMaxSize(10)
  @IsString({ each: true })
  @MaxLength(2000, { each: true })
  redirect_uris?: string[];

  @ApiPropertyOptional({
    type: [String],
    enum: ALL_SCOPES,
    minItems: 1,
    example: ['openid', 'users:read'],
    description: 'Replaces the scopes the client may ask for',
  })
  @IsOptional()
  @IsArray()
  @ArrayMinSize(1)
  @IsIn(ALL_SCOPES, { each: true, message: `each scope must be one of ${ALL_SCOPES.join(', ')}` })
  scopes?: string[];
}
