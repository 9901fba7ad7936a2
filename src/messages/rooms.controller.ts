import { Body, Controller, Get, Param, Post, Query, Req, Res } from '@nestjs/common';
import { ApiTags } from '@nestjs/swagger';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { withEtag } from '../http/etag.js';
import { Authenticated, CurrentCaller } from '../identity/auth.decorators.js';
import type { Caller } from '../identity/caller.js';
import { Role } from '../identity/role.js';
import { linkHeader } from '../common/list-query.js';
import { restPageOf } from '../database/connection-value.js';
import { PublicUrl } from '../http/public-url.js';
import { ApiDoc, ApiPage, ApiSingle, ApiStandardErrors } from '../common/openapi/decorators.js';

import { CreateRoomInput, SendMessageInput } from './dto/message.inputs.js';
import { MessageResponse, RoomResponse } from './dto/message.response.js';
import { toRestMessage, toRestRoom } from './messages.mapper.js';
import { MESSAGE_LIST_SPEC, MessagesService } from './messages.service.js';
import { ROOM_LIST_SPEC, RoomsService } from './rooms.service.js';
import { Idempotent } from '../idempotency/idempotent.decorator.js';

/** Rooms and their messages. GUESTs read; USER and ADMIN create rooms and send messages. */
@ApiTags('rooms')
@Controller('rooms')
export class RoomsController {
  constructor(
    private readonly rooms: RoomsService,
    private readonly messages: MessagesService,
    private readonly publicUrl: PublicUrl,
  ) {}

  @Get()
  @Authenticated({ role: Role.GUEST, scopes: ['messages:read'] })
  @ApiDoc('List rooms')
  @ApiPage(RoomResponse, ROOM_LIST_SPEC)
  @ApiStandardErrors('authenticated')
  async list(
    @CurrentCaller() caller: Caller,
    @Query() query: Record<string, unknown>,
    @Req() req: FastifyRequest,
    @Res({ passthrough: true }) reply: FastifyReply,
  ) {
    const page = await restPageOf(await this.rooms.page(caller, { rest: query }));
    void reply.header('Link', linkHeader(this.publicUrl.base, req.url, page.meta, page.next));
    return { data: page.data.map(toRestRoom), meta: page.meta };
  }

  @Post()
  @Idempotent()
  @Authenticated({ role: Role.USER, scopes: ['messages:write'] })
  @ApiDoc('Create a room (USER or ADMIN)')
  @ApiSingle(RoomResponse, { status: 201, location: true })
  @ApiStandardErrors('authenticated-write', { conflict: 'A room with this name already exists.' })
  async create(
    @CurrentCaller() caller: Caller,
    @Body() input: CreateRoomInput,
    @Res({ passthrough: true }) reply: FastifyReply,
  ) {
    const room = await this.rooms.create(caller, input);
    void reply.code(201).header('Location', `${this.publicUrl.base}/api/v1/rooms/${room.id}`);
    return withEtag(reply, toRestRoom(room));
  }

  @Get(':id')
  @Authenticated({ role: Role.GUEST, scopes: ['messages:read'] })
  @ApiDoc('Get a room')
  @ApiSingle(RoomResponse)
  @ApiStandardErrors('authenticated', { notFound: 'No such room' })
  async get(@CurrentCaller() caller: Caller, @Param('id') id: string) {
    return { data: toRestRoom(await this.rooms.get(caller, id)) };
  }

  @Get(':id/messages')
  @Authenticated({ role: Role.GUEST, scopes: ['messages:read'] })
  @ApiDoc('List a room’s messages', 'In the order they were sent (docs/orders-and-rooms.md).')
  @ApiPage(MessageResponse, MESSAGE_LIST_SPEC)
  @ApiStandardErrors('authenticated', { notFound: 'No such room' })
  async listMessages(
    @CurrentCaller() caller: Caller,
    @Param('id') roomId: string,
    @Query() query: Record<string, unknown>,
    @Req() req: FastifyRequest,
    @Res({ passthrough: true }) reply: FastifyReply,
  ) {
    const [value] = await this.messages.messagesOfRooms(caller, [roomId], { rest: query });
    const page = await restPageOf(value);
    void reply.header('Link', linkHeader(this.publicUrl.base, req.url, page.meta, page.next));
    return { data: page.data.map(toRestMessage), meta: page.meta };
  }

  /** 201 with the message (messages have no URL of their own, hence no Location). */
  @Post(':id/messages')
  @Idempotent()
  @Authenticated({ role: Role.USER, scopes: ['messages:write'] })
  @ApiDoc(
    'Send a message to a room (USER or ADMIN)',
    'Subscribers of the room receive it over GraphQL subscriptions (docs/realtime.md). Messages have no URL of their own, hence no `Location`.',
  )
  @ApiSingle(MessageResponse, { status: 201 })
  @ApiStandardErrors('authenticated-write', { notFound: 'No such room' })
  async send(
    @CurrentCaller() caller: Caller,
    @Param('id') roomId: string,
    @Body() input: SendMessageInput,
    @Res({ passthrough: true }) reply: FastifyReply,
  ) {
    const message = await this.messages.send(caller, roomId, input);
    void reply.code(201);
    return { data: toRestMessage(message) };
  }
}
