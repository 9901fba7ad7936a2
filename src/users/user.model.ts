import {
  Directive,
  Field,
  ID,
  InputType,
  Int,
  ObjectType,
  registerEnumType,
} from '@nestjs/graphql';
import { Connection, OrderDirection } from '../graphql/connection.js';
import { Node } from '../graphql/node.js';
import { Role } from '../graphql/role.graphql.js';
import { DateTimeScalar } from '../graphql/scalars/date-time.scalar.js';

/**
 * GraphQL `User`: the service's `User` value, its fields read as plain properties by graphql-js;
 * `email` (the visibility rule) is resolved in users.resolver.ts, `posts` and `orders` by their modules.
 */
@ObjectType('User', { implements: () => [Node] })
@Directive('@auth(scopes: ["users:read"])')
@Directive('@cacheControl(maxAge: 30)')
export class UserModel implements Node {
  @Field(() => ID)
  id!: string;

  @Field()
  name!: string;

  @Field(() => String, {
    nullable: true,
    description: 'Visible to the user themself and to administrators; null for everyone else.',
  })
  @Directive('@cacheControl(maxAge: 0, scope: PRIVATE)')
  email!: string | null;

  @Field(() => Role)
  role!: Role;

  @Field(() => Int, { nullable: true, description: '0-150, or null when unknown.' })
  age!: number | null;

  @Field(() => DateTimeScalar)
  createdAt!: string;

  @Field(() => DateTimeScalar)
  updatedAt!: string;
}

@ObjectType('UserConnection')
@Directive('@auth(scopes: ["users:read"])')
@Directive('@cacheControl(maxAge: 30)')
export class UserConnection extends Connection(UserModel, 'User') {}

export enum UserOrderField {
  CREATED_AT = 'created_at',
  UPDATED_AT = 'updated_at',
  NAME = 'name',
}
registerEnumType(UserOrderField, { name: 'UserOrderField' });

@InputType('UserOrder', {
  description: 'Default: CREATED_AT ASC; ties are broken by id in the same direction.',
})
export class UserOrder {
  @Field(() => UserOrderField)
  field!: UserOrderField;

  @Field(() => OrderDirection, { defaultValue: OrderDirection.ASC })
  direction!: OrderDirection;
}

/**
 * `Admin`: an administrator and what the role allows (the `admins` query and `node(id:)`, ADMIN only).
 * Its own `adm_` id (the ULID of its user's `usr_` id), so a client cache keyed by id never mixes an
 * `Admin` with the `User` it describes; `user` links to that `User`.
 */
@ObjectType('Admin', { implements: () => [Node] })
@Directive('@auth(scopes: ["users:read"])')
export class AdminModel implements Node {
  @Field(() => ID)
  id!: string;

  /** The user's id (resolved into `user`). */
  userId!: string;

  @Field()
  name!: string;

  @Field(() => String, { nullable: true })
  email!: string | null;

  @Field(() => [String], {
    description: 'What the ADMIN role permits (docs/contract.md section 7).',
  })
  permissions!: string[];
}

export const ADMIN_PERMISSIONS = [
  'users:read',
  'users:create',
  'users:update',
  'users:delete',
  'users:role',
  'posts:write',
  'posts:moderate',
  'orders:any',
  'api-keys:any',
  'oauth-clients:manage',
];
