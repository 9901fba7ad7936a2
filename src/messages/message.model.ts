import { Directive, Field, ID, ObjectType } from '@nestjs/graphql';
import { Connection } from '../graphql/connection.js';
import { Node } from '../graphql/node.js';
import { DateTimeScalar } from '../graphql/scalars/date-time.scalar.js';

/** `Message.content`: up to 4 000 characters, 1 point per 2 500 (docs/graphql.md); REST lists too. */
export const MESSAGE_CONTENT_COST = 2;

/** GraphQL `Room`; `messages` is resolved by RoomMessagesResolver. */
@ObjectType('Room', { implements: () => [Node] })
@Directive('@auth(scopes: ["messages:read"])')
export class RoomModel implements Node {
  @Field(() => ID)
  id!: string;

  @Field({ description: '1-100 characters, unique.' })
  name!: string;

  @Field(() => DateTimeScalar)
  createdAt!: string;
}

/** GraphQL `Message` (plain properties of `Message`); `author` and `room` are resolved by MessagesResolver. */
@ObjectType('Message', { implements: () => [Node] })
@Directive('@auth(scopes: ["messages:read"])')
export class MessageModel implements Node {
  @Field(() => ID)
  id!: string;

  @Field({ description: '1-4000 characters.' })
  @Directive(`@cost(weight: ${MESSAGE_CONTENT_COST})`)
  content!: string;

  @Field(() => DateTimeScalar)
  createdAt!: string;

  @Field({
    description:
      'Where this message stands in its room (opaque): pass it as `after` to `messageAdded` to resume after it.',
  })
  cursor!: string;
}

@ObjectType('RoomConnection')
@Directive('@auth(scopes: ["messages:read"])')
export class RoomConnection extends Connection(RoomModel, 'Room') {}

@ObjectType('MessageConnection')
@Directive('@auth(scopes: ["messages:read"])')
export class MessageConnection extends Connection(MessageModel, 'Message') {}
