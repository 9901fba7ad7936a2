import {
  Args,
  Context,
  ID,
  Int,
  Mutation,
  Parent,
  Query,
  ResolveField,
  Resolver,
  Subscription,
} from '@nestjs/graphql';
import { NotFound } from '../common/errors.js';
import { validateInput } from '../common/validation.js';
import { EventsService } from '../events/events.service.js';
import type { GqlContext } from '../graphql/context.js';
import {
  connectionFromRows,
  encodeCursor,
  pageWindow,
  type ConnectionValue,
} from '../graphql/connection.js';
import { byId } from '../graphql/loaders.js';
import { NodeRegistry } from '../graphql/node.js';
import type { User } from '../users/user.js';
import { UserModel } from '../users/user.model.js';
import { userLoader } from '../users/users.loaders.js';
import { UsersService } from '../users/users.service.js';
import { CreateRoomInput, SendMessageInput } from './dto/message.inputs.js';
import type { Message, MessageEvent, Room } from './message.js';
import { MessageConnection, MessageModel, RoomConnection, RoomModel } from './message.model.js';
import { MessagesService, type SequencedMessage } from './messages.service.js';
import { RoomsService, requireCaller } from './rooms.service.js';

const ROOM_KEY = 'created_at';
const MESSAGE_KEY = 'seq';

function roomLoader(ctx: GqlContext, rooms: RoomsService) {
  return ctx.loaders.get<string, Room | undefined>('roomById', async (ids) =>
    byId(ids, await rooms.findByIds(ids)),
  );
}

/** Rooms: queries, creation, and `Room.messages` (batched over a list of rooms). */
@Resolver(() => RoomModel)
export class RoomsResolver {
  constructor(
    private readonly rooms: RoomsService,
    private readonly messages: MessagesService,
    nodes: NodeRegistry,
  ) {
    nodes.register('room', 'Room', (ctx, id) => this.rooms.get(ctx.caller, id));
    nodes.register('message', 'Message', (ctx, id) => this.messages.get(ctx.caller, id));
  }

  @Query(() => RoomConnection, { name: 'rooms', description: 'Rooms, oldest first.' })
  async listRooms(
    @Context() ctx: GqlContext,
    @Args('first', { type: () => Int, nullable: true }) first?: number,
    @Args('after', { type: () => String, nullable: true }) after?: string,
  ): Promise<ConnectionValue<Room>> {
    requireCaller(ctx.caller);
    const window = pageWindow({ first, after }, ROOM_KEY);
    const rows = await this.rooms.page(ctx.caller, { size: window.size, after: window.after });
    return connectionFromRows(rows, window, (r) => encodeCursor(ROOM_KEY, r.createdAt, r.id), {
      totalCount: () => this.rooms.count(),
      existsBeyond: async () => window.after !== undefined,
    });
  }

  @Query(() => RoomModel, { nullable: true, description: 'A room by id (NOT_FOUND when unknown).' })
  room(@Args('id', { type: () => ID }) id: string, @Context() ctx: GqlContext): Promise<Room> {
    return this.rooms.get(ctx.caller, id);
  }

  @Mutation(() => RoomModel, {
    description: 'A new room (USER or ADMIN); CONFLICT when the name is taken.',
  })
  async createRoom(@Args('name') name: string, @Context() ctx: GqlContext): Promise<Room> {
    return this.rooms.create(ctx.caller, await validateInput(CreateRoomInput, { name }));
  }

  @ResolveField('messages', () => MessageConnection, {
    description: 'Messages in the order they were committed (oldest first).',
  })
  async roomMessages(
    @Parent() room: Room,
    @Context() ctx: GqlContext,
    @Args('first', { type: () => Int, nullable: true }) first?: number,
    @Args('after', { type: () => String, nullable: true }) after?: string,
  ): Promise<ConnectionValue<Message>> {
    requireCaller(ctx.caller);
    const window = pageWindow({ first, after }, MESSAGE_KEY);
    const afterSeq = window.after ? Number(window.after[0]) : undefined;
    const pages = ctx.loaders.get<string, SequencedMessage[]>(
      `messagesOfRoom:${window.size}:${after ?? ''}`,
      async (ids) => {
        const byRoom = await this.messages.pagesForRooms(ids, { size: window.size, afterSeq });
        return ids.map((id) => byRoom.get(id) ?? []);
      },
    );
    const counts = ctx.loaders.get<string, number>('messageCounts', async (ids) => {
      const byRoom = await this.messages.countsForRooms(ids);
      return ids.map((id) => byRoom.get(id) ?? 0);
    });
    const rows = await pages.load(room.id);
    const connection = connectionFromRows(
      rows,
      window,
      (r) => encodeCursor(MESSAGE_KEY, r.seq, r.message.id),
      {
        totalCount: () => counts.load(room.id),
        existsBeyond: async () => window.after !== undefined,
      },
    );
    return {
      ...connection,
      edges: connection.edges.map((e) => ({ cursor: e.cursor, node: e.node.message })),
      nodes: connection.nodes.map((n) => n.message),
    };
  }
}

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
  newMessage(@Context() ctx: GqlContext): AsyncIterableIterator<MessageEvent> {
    requireCaller(ctx.caller);
    return this.events.newMessages();
  }

  @Subscription(() => MessageModel, {
    description: 'Messages sent in one room, in commit order. NOT_FOUND for an unknown room.',
    resolve: (message: MessageEvent) => message,
  })
  async messageAdded(
    @Args('roomId', { type: () => ID }) roomId: string,
    @Context() ctx: GqlContext,
  ): Promise<AsyncIterableIterator<MessageEvent>> {
    await this.rooms.get(ctx.caller, roomId);
    return this.events.roomMessages(roomId);
  }
}
