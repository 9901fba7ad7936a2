import { IsString, Length, MaxLength } from 'class-validator';

export class TokenInput {
  @IsString()
  @MaxLength(254)
  email!: string;

  @IsString()
  @MaxLength(128)
  password!: string;
}

export class RefreshInput {
  @IsString()
  @Length(10, 200)
  refresh_token!: string;
}
