import { Transform } from 'class-transformer';
import { IsEmail, IsString, Length, MaxLength, ValidateIf } from 'class-validator';

const trim = ({ value }: { value: unknown }) => (typeof value === 'string' ? value.trim() : value);

/**
 * GraphQL only: the short form `createUser(name:, email:)`, the one way to make a user without an
 * email (docs/contract.md section 4). Same rules as CreateUserInput for the members it has.
 */
export class CreateUserShortInput {
  @Transform(trim)
  @IsString()
  @Length(1, 100)
  name!: string;

  @ValidateIf((o: CreateUserShortInput) => o.email !== undefined)
  @Transform(trim)
  @IsEmail({}, { message: 'email must be a valid email address' })
  @MaxLength(254)
  email?: string;
}
