import { GraphQLError } from 'graphql';
import {
  Args,
  Context,
  Directive,
  ID,
  Mutation,
  ResolveField,
  Resolver,
  Subscription,
} from '@nestjs/graphql';
import { NotFound } from '../common/errors.js';
import { validateInput } from '../common/validation.js';
import { EventsService } from '../events/events.service.js';
import type { GqlContext } from '../graphql/context.js';
import { replayGateOf } from '../graphql/ws-replay.js';
import { isRoomResync, type RoomResync } from '../events/events.service.js';
import type { User } from '../domain/user.js';
import { UserModel } from '../users/user.model.js';
import { userLoader } from '../users/users.loaders.js';
import { UsersService } from '../users/users.service.js';
import { SendMessageInput } from './dto/message.inputs.js';
import type { Message, MessageEvent, Room } from '../domain/message.js';
import { MessageModel, RoomModel } from './message.model.js';
import { MessagesRepository } from './messages.repository.js';
import { MessagesService } from './messages.service.js';
import {
  FELL_BEHIND,
  MAX_REPLAY,
  resumableRoomStream,
  resyncRequired,
  type RoomStreamItem,
} from './resumable-room-stream.js';
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
    private readonly stored: MessagesRepository,
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
  author(message: MessageEvent, _args: unknown, ctx: GqlContext): User | Promise<User | undefined> {
    // events carry a snapshot: hundreds of subscribers cost no reads per event
    return message.author ?? userLoader(ctx, this.users).load(message.authorId);
  }

  @ResolveField('room', () => RoomModel)
  async room(message: MessageEvent, _args: unknown, ctx: GqlContext): Promise<Room> {
    const room = message.room ?? (await roomLoader(ctx, this.rooms).load(message.roomId));
    if (!room) {
      throw NotFound('Room');
    }
    return room;
  }

  @Subscription(() => MessageModel, {
    description:
      'Every message sent in any room, in commit order per room, from the time of subscribing.',
    // messages this instance's live stream lost and could not fill: RESYNC_REQUIRED (docs/realtime.md)
    resolve: (message: MessageEvent | RoomResync) => {
      if (isRoomResync(message)) {
        throw liveGap(message);
      }
      return message;
    },
  })
  @Directive('@auth(requires: GUEST, scopes: ["messages:read"])')
  newMessage(@Context() ctx: GqlContext): AsyncIterableIterator<MessageEvent> {
    requireCaller(ctx.caller);
    return this.events.newMessages();
  }

  @Subscription(() => MessageModel, {
    description: `Messages sent in one room, in commit order. NOT_FOUND for an unknown room. With \`after\` (a \`Message.cursor\` of this room), first every message committed after that one, then the live ones, with no gap and no duplicate; more than ${MAX_REPLAY} missed -> RESYNC_REQUIRED; a malformed cursor or one of another room -> BAD_USER_INPUT.`,
    // a resumed subscriber that falls more than MAX_REPLAY messages behind gets RESYNC_REQUIRED last
    resolve: (item: RoomStreamItem | RoomResync) => {
      if (item === FELL_BEHIND) {
        throw resyncRequired();
      }
      if (isRoomResync(item)) {
        throw liveGap(item);
      }
      return item as MessageEvent;
    },
  })
  @Directive('@auth(requires: GUEST, scopes: ["messages:read"])')
  async messageAdded(
    @Args('roomId', { type: () => ID }) roomId: string,
    @Context() ctx: GqlContext,
    @Args('after', {
      type: () => String,
      nullable: true,
      description: 'The cursor of the last message received: resume after it.',
    })
    after?: string | null,
  ): Promise<AsyncIterableIterator<RoomStreamItem>> {
    const room = await this.rooms.get(ctx.caller, roomId);
    if (after === undefined || after === null) {
      return this.events.roomMessages(roomId);
    }
    const afterSeq = this.messages.seqOfCursor(roomId, after);
    return resumableRoomStream(
      {
        listen: (listener) => this.events.listenRoom(roomId, listener),
        lastSeq: () => this.stored.lastSeq(roomId),
        gate: replayGateOf(ctx),
        load: async (fromSeq, limit) => {
          const messages = await this.stored.listFrom(roomId, fromSeq, limit);
          if (messages.length === 0) {
            return messages;
          }
          // the snapshots live events carry, read once per page
          const authorIds = [...new Set(messages.map((m) => m.authorId))];
          const authors = new Map((await this.users.findByIds(authorIds)).map((u) => [u.id, u]));
          return messages.map(
            (m): MessageEvent => ({ ...m, room, author: authors.get(m.authorId) }),
          );
        },
      },
      afterSeq,
    );
  }
}

/** What a live subscriber gets for messages its instance lost and could not fill from the database. */
function liveGap(gap: RoomResync): GraphQLError {
  return new GraphQLError(
    `Messages ${gap.fromSeq}..${gap.toSeq} of room ${gap.roomId} could not be delivered: reload the room through Room.messages`,
    { extensions: { code: 'RESYNC_REQUIRED', maxReplay: MAX_REPLAY } },
  );
}
