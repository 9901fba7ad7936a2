import { ApiProperty, ApiSchema } from '@nestjs/swagger';

/** `POST /auth/token` and `/auth/refresh` (RFC 6749 section 5.1 names, not wrapped in `{data}`). */
@ApiSchema({ name: 'TokenPair' })
export class TokenPair {
  @ApiProperty({
    example: 'eyJhbGciOiJSUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiJ1c3JfMDEifQ.c2ln',
    description: 'A JWT; send it as `Authorization: Bearer …`.',
  })
  access_token!: string;

  @ApiProperty({ enum: ['Bearer'], example: 'Bearer' })
  token_type!: 'Bearer';

  @ApiProperty({
    type: 'integer',
    minimum: 1,
    example: 900,
    description: 'Seconds until the access token expires.',
  })
  expires_in!: number;

  @ApiProperty({
    example: 'rt_Jm2X1kQ9vB7nR4tW8yZ0pL3sD6fG5hK',
    description: 'Single use: a refresh returns a new pair.',
  })
  refresh_token!: string;
}
