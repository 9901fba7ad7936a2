import {
  Args,
  Context,
  Directive,
  ID,
  Mutation,
  Parent,
  ResolveField,
  Resolver,
  Subscription,
} from '@nestjs/graphql';
import { NotFound } from '../common/errors.js';
import { validateInput } from '../common/validation.js';
import { EventsService } from '../events/events.service.js';
import type { GqlContext } from '../graphql/context.js';
import type { User } from '../users/user.js';
import { UserModel } from '../users/user.model.js';
import { userLoader } from '../users/users.loaders.js';
import { UsersService } from '../users/users.service.js';
import { SendMessageInput } from './dto/message.inputs.js';
import type { Message, MessageEvent, Room } from './message.js';
import { MessageModel, RoomModel } from './message.model.js';
import { MessagesService } from './messages.service.js';
import { roomLoader } from './rooms.loaders.js';
import { RoomsService, requireCaller } from './rooms.service.js';

/** Messages: sending, their author and room, and the two message subscriptions. */
@Resolver(() => MessageModel)
export class MessagesResolver {
  constructor(
    private readonly rooms: RoomsService,
    private readonly messages: MessagesService,
    private readonly users: UsersService,
    private readonly events: EventsService,
  ) {}

  @Mutation(() => MessageModel, {
    description: 'Sends a message (USER or ADMIN); fires newMessage and messageAdded after commit.',
  })
  @Directive('@auth(requires: USER, scopes: ["messages:write"])')
  async sendMessage(
    @Args('roomId', { type: () => ID }) roomId: string,
    @Args('content') content: string,
    @Context() ctx: GqlContext,
  ): Promise<Message> {
    return this.messages.send(
      ctx.caller,
      roomId,
      await validateInput(SendMessageInput, { content }),
    );
  }

  @ResolveField('author', () => UserModel, {
    nullable: true,
    description: 'Who sent it (null once that user is deleted).',
  })
  author(
    @Parent() message: MessageEvent,
    @Context() ctx: GqlContext,
  ): User | Promise<User | undefined> {
    // events carry a snapshot: hundreds of subscribers cost no reads per event
    return message.author ?? userLoader(ctx, this.users).load(message.authorId);
  }

  @ResolveField('room', () => RoomModel)
  async room(@Parent() message: MessageEvent, @Context() ctx: GqlContext): Promise<Room> {
    const room = message.room ?? (await roomLoader(ctx, this.rooms).load(message.roomId));
    if (!room) {
      throw NotFound('Room');
    }
    return room;
  }

  @Subscription(() => MessageModel, {
    description:
      'Every message sent in any room, in commit order per room, from the time of subscribing.',
    resolve: (message: MessageEvent) => message,
  })
  @Directive('@auth(requires: GUEST, scopes: ["messages:read"])')
  newMessage(@Context() ctx: GqlContext): AsyncIterableIterator<MessageEvent> {
    requireCaller(ctx.caller);
    return this.events.newMessages();
  }

  @Subscription(() => MessageModel, {
    description: 'Messages sent in one room, in commit order. NOT_FOUND for an unknown room.',
    resolve: (message: MessageEvent) => message,
  })
  @Directive('@auth(requires: GUEST, scopes: ["messages:read"])')
  async messageAdded(
    @Args('roomId', { type: () => ID }) roomId: string,
    @Context() ctx: GqlContext,
  ): Promise<AsyncIterableIterator<MessageEvent>> {
    await this.rooms.get(ctx.caller, roomId);
    return this.events.roomMessages(roomId);
  }
}
