import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import { IsIn, IsString, Length, ValidateIf } from 'class-validator';
import { IsRfc3339 } from '../../common/validation.js';
import { Role, ROLES } from '../../identity/role.js';

export class CreateApiKeyInput {
  @ApiProperty({ minLength: 1, maxLength: 100, example: 'dashboard' })
  @Transform(({ value }: { value: unknown }) => (typeof value === 'string' ? value.trim() : value))
  @IsString()
  @Length(1, 100)
  name!: string;

  /** Defaults to the owner's role; never higher than it. */
  @ApiPropertyOptional({
    enum: ROLES,
    description: "Defaults to the owner's role; never higher than it",
  })
  @ValidateIf((o: CreateApiKeyInput) => o.role !== undefined)
  @IsIn(ROLES, { message: `role must be one of ${ROLES.join(', ')}` })
  role?: Role;

  /** RFC 3339; null or absent = does not expire. */
  @ApiPropertyOptional({
    type: 'string',
    format: 'date-time',
    nullable: true,
    description: 'RFC 3339, in the future; null or absent: never expires',
  })
  @ValidateIf((o: CreateApiKeyInput) => o.expires_at !== undefined && o.expires_at !== null)
  @IsRfc3339()
  expires_at?: string | null;
}
