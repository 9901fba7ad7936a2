import { Transform } from 'class-transformer';
import { IsEmail, IsIn, IsInt, IsString, Length, Max, MaxLength, Min, ValidateIf } from 'class-validator';
import { Role, ROLES } from '../../auth/role.js';

const trim = ({ value }: { value: unknown }) => (typeof value === 'string' ? value.trim() : value);

/**
 * Inputs of the users resource, defined once and shared by REST and GraphQL (STYLE.md habit 4).
 * Presence rules differ per operation (create/replace/patch), so each class states them with
 * ValidateIf: `undefined` = absent, `null` = "clear" (only for nullable members).
 */
export class CreateUserInput {
  @Transform(trim)
  @IsString()
  @Length(1, 100)
  name!: string;

  @Transform(trim)
  @IsEmail({}, { message: 'email must be a valid email address' })
  @MaxLength(254)
  email!: string;

  @ValidateIf((o: CreateUserInput) => o.role !== undefined)
  @IsIn(ROLES, { message: `role must be one of ${ROLES.join(', ')}` })
  role?: Role;

  @ValidateIf((o: CreateUserInput) => o.age !== undefined && o.age !== null)
  @IsInt()
  @Min(0)
  @Max(150)
  age?: number | null;

  @ValidateIf((o: CreateUserInput) => o.password !== undefined)
  @IsString()
  @Length(12, 128)
  password?: string;
}

/** PUT body: the same members and rules as create (absent `age` becomes null). */
export class ReplaceUserInput extends CreateUserInput {}

/** PATCH body (JSON merge patch, RFC 7396): every member optional; null clears `age` only. */
export class PatchUserInput {
  @ValidateIf((o: PatchUserInput) => o.name !== undefined)
  @Transform(trim)
  @IsString()
  @Length(1, 100)
  name?: string;

  @ValidateIf((o: PatchUserInput) => o.email !== undefined)
  @Transform(trim)
  @IsEmail({}, { message: 'email must be a valid email address' })
  @MaxLength(254)
  email?: string;

  @ValidateIf((o: PatchUserInput) => o.role !== undefined)
  @IsIn(ROLES, { message: `role must be one of ${ROLES.join(', ')}` })
  role?: Role;

  @ValidateIf((o: PatchUserInput) => o.age !== undefined && o.age !== null)
  @IsInt()
  @Min(0)
  @Max(150)
  age?: number | null;

  @ValidateIf((o: PatchUserInput) => o.password !== undefined)
  @IsString()
  @Length(12, 128)
  password?: string;
}

/** POST /auth/register: a USER that can sign in, so email and password are required. */
export class RegisterInput {
  @Transform(trim)
  @IsString()
  @Length(1, 100)
  name!: string;

  @Transform(trim)
  @IsEmail({}, { message: 'email must be a valid email address' })
  @MaxLength(254)
  email!: string;

  @IsString()
  @Length(12, 128)
  password!: string;
}
