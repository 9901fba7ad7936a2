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
import { ALL_SCOPES } from './oauth.scopes.js';

export class CreateOAuthClientInput {
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
    default: false,
    description: 'true: a public client (no secret: browser or native app); false: confidential',
  })
  @IsOptional()
  @IsBoolean()
  public?: boolean;
}
