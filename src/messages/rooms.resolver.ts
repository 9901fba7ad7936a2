import {
  Args,
  Context,
  Directive,
  ID,
  Int,
  Mutation,
  Parent,
  Query,
  ResolveField,
  Resolver,
} from '@nestjs/graphql';
import { validateInput } from '../common/validation.js';
import type { GqlContext } from '../graphql/context.js';
import type { ConnectionValue, PageValue } from '../database/connection-value.js';
import { NodeRegistry } from '../graphql/node.js';
import { CreateRoomInput } from './dto/message.inputs.js';
import type { Message, Room } from '../domain/message.js';
import { MessageConnection, RoomConnection, RoomModel } from './message.model.js';
import { MessagesService } from './messages.service.js';
import { RoomsService } from './rooms.service.js';

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
  @Directive('@auth(requires: GUEST, scopes: ["messages:read"])')
  async listRooms(
    @Context() ctx: GqlContext,
    @Args('first', { type: () => Int, nullable: true }) first?: number,
    @Args('after', { type: () => String, nullable: true }) after?: string,
  ): Promise<ConnectionValue<Room>> {
    return this.rooms.page(ctx.caller, {
      window: { first, after },
      sort: { field: 'created_at', desc: false },
    });
  }

  @Query(() => RoomModel, { nullable: true, description: 'A room by id (NOT_FOUND when unknown).' })
  @Directive('@auth(requires: GUEST, scopes: ["messages:read"])')
  room(@Args('id', { type: () => ID }) id: string, @Context() ctx: GqlContext): Promise<Room> {
    return this.rooms.get(ctx.caller, id);
  }

  @Mutation(() => RoomModel, {
    description: 'A new room (USER or ADMIN); CONFLICT when the name is taken.',
  })
  @Directive('@auth(requires: USER, scopes: ["messages:write"])')
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
    // one call of the service for every room of the page (DataLoader)
    const pages = ctx.loaders.get<string, PageValue<Message>>(
      `messagesOfRooms:${first ?? ''}:${after ?? ''}`,
      (ids) =>
        this.messages.messagesOfRooms(ctx.caller, ids, {
          window: { first, after },
          sort: { field: 'seq', desc: false },
        }),
    );
    return pages.load(room.id);
  }
}
