import { ApiProperty, ApiSchema } from '@nestjs/swagger';
import { AUTH_METHODS, type AuthMethod } from '../../identity/caller.js';
import { Role, ROLES } from '../../identity/role.js';

/**
 * A user in REST bodies (snake_case): the type `toRestUser` returns, so the mapper and the OpenAPI
 * schema `User` are one definition.
 */
@ApiSchema({ name: 'User' })
export class UserResponse {
  @ApiProperty({ example: 'usr_01JD5Z6K3M8Q2W4E6R8T0Y2U4I' })
  id!: string;

  @ApiProperty({ example: 'Ada Lovelace' })
  name!: string;

  @ApiProperty({
    type: 'string',
    format: 'email',
    nullable: true,
    example: 'ada@example.com',
    description: 'Visible to the user themself and to administrators; null for everyone else.',
  })
  email!: string | null;

  @ApiProperty({ enum: ROLES, enumName: 'Role', example: Role.USER })
  role!: Role;

  @ApiProperty({ type: 'integer', nullable: true, minimum: 0, maximum: 150, example: 36 })
  age!: number | null;

  @ApiProperty({ format: 'date-time', example: '2026-11-23T18:00:00.000Z' })
  created_at!: string;

  @ApiProperty({ format: 'date-time', example: '2026-11-23T18:00:00.000Z' })
  updated_at!: string;
}

/** How the caller of `GET /auth/me` authenticated. */
@ApiSchema({ name: 'AuthInfo' })
export class AuthInfoResponse {
  @ApiProperty({ enum: AUTH_METHODS, example: 'jwt' })
  method!: AuthMethod;

  @ApiProperty({
    enum: ROLES,
    enumName: 'Role',
    example: Role.USER,
    description: 'Effective role (an API key’s, when authenticated by one).',
  })
  role!: Role;

  @ApiProperty({
    type: 'string',
    nullable: true,
    example: null,
    description: 'The API key used, if any.',
  })
  key_id!: string | null;
}

/** `GET /auth/me`: the caller's user and how they authenticated. */
@ApiSchema({ name: 'Me' })
export class MeResponse extends UserResponse {
  @ApiProperty({ type: () => AuthInfoResponse })
  auth!: AuthInfoResponse;
}

/** One result of `POST /users/batch`, in the order of the operations. */
@ApiSchema({ name: 'BatchResult' })
export class BatchResultResponse {
  @ApiProperty({ enum: ['create', 'update'], example: 'create' })
  op!: 'create' | 'update';

  @ApiProperty({ enum: [200, 201], type: 'integer', example: 201 })
  status!: 200 | 201;

  @ApiProperty({ type: () => UserResponse })
  data!: UserResponse;
}
