import { Transform } from 'class-transformer';
import { IsIn, IsISO8601, IsString, Length, ValidateIf } from 'class-validator';
import { Role, ROLES } from '../role.js';

export class CreateApiKeyInput {
  @Transform(({ value }: { value: unknown }) => (typeof value === 'string' ? value.trim() : value))
  @IsString()
  @Length(1, 100)
  name!: string;

  /** Defaults to the owner's role; never higher than it. */
  @ValidateIf((o: CreateApiKeyInput) => o.role !== undefined)
  @IsIn(ROLES, { message: `role must be one of ${ROLES.join(', ')}` })
  role?: Role;

  /** RFC 3339; null or absent = does not expire. */
  @ValidateIf((o: CreateApiKeyInput) => o.expires_at !== undefined && o.expires_at !== null)
  @IsISO8601({ strict: true }, { message: 'expires_at must be an RFC 3339 timestamp' })
  expires_at?: string | null;
}
