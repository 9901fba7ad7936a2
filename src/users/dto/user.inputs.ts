import { Field, InputType, Int } from '@nestjs/graphql';
import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import {
  IsEmail,
  IsIn,
  IsInt,
  IsString,
  Length,
  Max,
  MaxLength,
  Min,
  ValidateIf,
} from 'class-validator';
import { Role, ROLES } from '../../identity/role.js';
import '../../graphql/role.graphql.js';

const trim = ({ value }: { value: unknown }) => (typeof value === 'string' ? value.trim() : value);

/**
 * Inputs of the users resource, defined once and shared by REST and GraphQL (CONTRIBUTING.md, house style 4).
 * Presence rules differ per operation (create/replace/patch), so each class states them with
 * ValidateIf: `undefined` = absent, `null` = "clear" (only for nullable members).
 * The GraphQL decorators (@InputType/@Field) describe the same classes in the schema.
 */
@InputType('CreateUserInput')
export class CreateUserInput {
  @ApiProperty({ minLength: 1, maxLength: 100, example: 'Ada Lovelace' })
  @Field({ description: '1-100 characters, trimmed.' })
  @Transform(trim)
  @IsString()
  @Length(1, 100)
  name!: string;

  @ApiProperty({ format: 'email', maxLength: 254, example: 'ada@example.com' })
  @Field({ description: 'Unique among live users (case-insensitive), at most 254 characters.' })
  @Transform(trim)
  @IsEmail({}, { message: 'email must be a valid email address' })
  @MaxLength(254)
  email!: string;

  // No `default` in the document: a generator that honours it (openapi-typescript's default
  // options) makes the member required; what an omitted role means is said in words.
  @ApiPropertyOptional({ enum: ROLES, description: 'Omitted: the new user is a USER.' })
  @Field(() => Role, { nullable: true, description: 'Omitted: the new user is a USER.' })
  @ValidateIf((o: CreateUserInput) => o.role !== undefined)
  @IsIn(ROLES, { message: `role must be one of ${ROLES.join(', ')}` })
  role?: Role;

  @ApiPropertyOptional({ type: 'integer', minimum: 0, maximum: 150, nullable: true })
  @Field(() => Int, { nullable: true, description: '0-150.' })
  @ValidateIf((o: CreateUserInput) => o.age !== undefined && o.age !== null)
  @IsInt()
  @Min(0)
  @Max(150)
  age?: number | null;

  @ApiPropertyOptional({ minLength: 12, maxLength: 128, writeOnly: true })
  @Field(() => String, { nullable: true, description: '12-128 characters; write-only.' })
  @ValidateIf((o: CreateUserInput) => o.password !== undefined)
  @IsString()
  @Length(12, 128)
  password?: string;
}

/**
 * PUT body: the same members and rules as create (absent `age` becomes null); an absent `role`
 * keeps the current one (and an absent `password` too).
 */
export class ReplaceUserInput extends CreateUserInput {
  @ApiPropertyOptional({
    enum: ROLES,
    description: 'Omitted: the current role is kept. Only administrators may change a role.',
  })
  override role?: Role;
}

/**
 * PATCH body (JSON merge patch, RFC 7396): every member optional; null clears `age` only.
 * In GraphQL this is `UpdateUserInput` (updateUser(id, input)).
 */
@InputType('UpdateUserInput')
export class PatchUserInput {
  @ApiPropertyOptional({ minLength: 1, maxLength: 100 })
  @Field(() => String, { nullable: true })
  @ValidateIf((o: PatchUserInput) => o.name !== undefined)
  @Transform(trim)
  @IsString()
  @Length(1, 100)
  name?: string;

  @ApiPropertyOptional({ format: 'email', maxLength: 254 })
  @Field(() => String, { nullable: true })
  @ValidateIf((o: PatchUserInput) => o.email !== undefined)
  @Transform(trim)
  @IsEmail({}, { message: 'email must be a valid email address' })
  @MaxLength(254)
  email?: string;

  @ApiPropertyOptional({ enum: ROLES, description: 'Only administrators may change a role.' })
  @Field(() => Role, { nullable: true, description: 'Only administrators may change a role.' })
  @ValidateIf((o: PatchUserInput) => o.role !== undefined)
  @IsIn(ROLES, { message: `role must be one of ${ROLES.join(', ')}` })
  role?: Role;

  @ApiPropertyOptional({
    type: 'integer',
    minimum: 0,
    maximum: 150,
    nullable: true,
    description: 'null clears it',
  })
  @Field(() => Int, { nullable: true, description: 'null clears it.' })
  @ValidateIf((o: PatchUserInput) => o.age !== undefined && o.age !== null)
  @IsInt()
  @Min(0)
  @Max(150)
  age?: number | null;

  @ApiPropertyOptional({ minLength: 12, maxLength: 128, writeOnly: true })
  @Field(() => String, { nullable: true })
  @ValidateIf((o: PatchUserInput) => o.password !== undefined)
  @IsString()
  @Length(12, 128)
  password?: string;
}

/** POST /auth/register: a USER that can sign in, so email and password are required. */
export class RegisterInput {
  @ApiProperty({ minLength: 1, maxLength: 100 })
  @Transform(trim)
  @IsString()
  @Length(1, 100)
  name!: string;

  @ApiProperty({ format: 'email', maxLength: 254 })
  @Transform(trim)
  @IsEmail({}, { message: 'email must be a valid email address' })
  @MaxLength(254)
  email!: string;

  @ApiProperty({ minLength: 12, maxLength: 128, writeOnly: true })
  @IsString()
  @Length(12, 128)
  password!: string;
}
