import { ApiProperty } from '@nestjs/swagger';
import { IsString, Length, MaxLength } from 'class-validator';

export class TokenInput {
  @ApiProperty({ format: 'email', example: 'admin@example.com' })
  @IsString()
  @MaxLength(254)
  email!: string;

  @ApiProperty({ writeOnly: true })
  @IsString()
  @MaxLength(128)
  password!: string;
}

export class RefreshInput {
  @ApiProperty({ description: 'The single-use refresh token from /auth/token or /auth/refresh' })
  @IsString()
  @Length(10, 200)
  refresh_token!: string;
}
