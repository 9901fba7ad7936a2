import { Injectable } from '@nestjs/common';
import { hasRole, type MaybeCaller } from '../identity/caller.js';
import { Role } from '../identity/role.js';
import { BadRequest, Forbidden, NotFound } from '../common/errors.js';
import { isId, newId, nowIso } from '../common/ids.js';
import { parseListQuery, type ListSpec, type PageRequest } from '../common/list-query.js';
import { ChangeRecord } from '../changes/change-record.js';
import { CountersRepository, CountKeys } from '../database/counters.repository.js';
import { DatabaseService } from '../database/database.service.js';
import type { SendMessageInput } from './dto/message.inputs.js';
import type { Message, MessageEvent } from '../domain/message.js';
import { MESSAGE_CONTENT_COST } from './message.model.js';
import { UsersRepository } from '../users/users.repository.js';
import { MessagesRepository } from './messages.repository.js';
import { messageFromRow } from './messages.row.js';
import { RoomsRepository } from './rooms.repository.js';
import {
  encodeCursor,
  decodeMessageCursor,
  encodeMessageCursor,
  pageWindow,
} from '../database/paging.js';
import { connectionFromRows, mapPage, type PageValue } from '../database/connection-value.js';
import { RoomsService, requireCaller } from './rooms.service.js';

/** Cursor key of `Room.messages` (kept as issued: docs/lists.md, "Paging module"). */
const ROOM_MESSAGES_KEY = 'seq';

export const MESSAGE_LIST_SPEC: ListSpec<never> = {
  sortFields: ['created_at'],
  defaultSort: [{ field: 'created_at', desc: false }],
  filters: {},
  parameters: {
    after: {
      description:
        'Only the messages sent after this one (a message id of this room, e.g. `msg_01JD5Z6K3M8Q2W4E6R8T0Y2U4I`): how a client catches up after a reconnect.',
      schema: { type: 'string' },
    },
  },
  memberCosts: { content: MESSAGE_CONTENT_COST },
};

/** A message with its room sequence number (GraphQL cursors use it). */
interface SequencedMessage {
  message: Message;
  seq: number;
}

/**
 * Messages of a room. Lists are oldest first with page rules; because messages are only ever appended
 * at the end, a page never shifts while new messages arrive. `after=<message id>` lists only what came
 * after that message (how a client catches up after a reconnect: docs/realtime.md).
 */
@Injectable()
export class MessagesService {
  constructor(
    private readonly db: DatabaseService,
    private readonly rooms: RoomsService,
    private readonly counters: CountersRepository,
    private readonly messages: MessagesRepository,
    private readonly roomRows: RoomsRepository,
    private readonly users: UsersRepository,
    private readonly changes: ChangeRecord,
  ) {}

  /**
   * The messages of rooms, oldest first, REST (`GET /rooms/{id}/messages`) and GraphQL
   * (`Room.messages`) alike, for the rooms of `roomIds` at once: one page value per room, in that
   * order. A REST request names one room, which must exist (404), and carries its query parameters
   * (page or cursor, `after=<message id>`). A GraphQL window (`first`/`after`) serves a page of
   * rooms with one statement (UNION ALL); their totals (one read of the counters) are read only when
   * selected.
   */
  async messagesOfRooms(
    caller: MaybeCaller,
    roomIds: readonly string[],
    request: PageRequest,
  ): Promise<PageValue<Message>[]> {
    requireCaller(caller);
    if ('rest' in request) {
      const [roomId] = roomIds;
      const rawQuery = request.rest;
      const query = parseListQuery(rawQuery, MESSAGE_LIST_SPEC);
      await this.rooms.get(caller, roomId);
      let afterSeq = 0;
      if (rawQuery.after !== undefined) {
        afterSeq = await this.seqOf(roomId, rawQuery.after);
      }
      // seq runs 1, 2, 3… without gaps in each room (send() takes the next number and inserts in one
      // transaction), so "after message #k" leaves exactly count - k messages: still O(1)
      const total = this.counters
        .get(CountKeys.messagesOfRoom(roomId))
        .then((n) => Math.max(0, n - afterSeq));
      const page = await this.messages.list(
        query,
        roomId,
        rawQuery.after !== undefined ? afterSeq : undefined,
        total,
      );
      return [mapPage(page, messageFromRow)];
    }
    const { first, after } = request.window;
    const window = pageWindow({ first, after }, ROOM_MESSAGES_KEY);
    const afterSeq = window.after ? Number(window.after[0]) : undefined;
    const pages = await this.pagesForRooms(roomIds, { size: window.size, afterSeq });
    let counts: Promise<Map<string, number>> | undefined;
    const countOf = async (roomId: string) => {
      counts ??= this.counters.getMany(roomIds.map((id) => CountKeys.messagesOfRoom(id)));
      return (await counts).get(CountKeys.messagesOfRoom(roomId)) ?? 0;
    };
    return roomIds.map((roomId) => {
      const connection = connectionFromRows(
        pages.get(roomId) ?? [],
        window,
        (r) => encodeCursor(ROOM_MESSAGES_KEY, [r.seq], r.message.id),
        {
          totalCount: () => countOf(roomId),
          existsBeyond: async () => window.after !== undefined,
        },
      );
      return mapPage(connection, (n) => n.message);
    });
  }

  /**
   * The first `size + 1` messages of each room in room order (seq), optionally after a position:
   * one statement for any number of rooms.
   */
  private async pagesForRooms(
    roomIds: readonly string[],
    opts: { size: number; afterSeq?: number },
  ): Promise<Map<string, SequencedMessage[]>> {
    const pages = new Map<string, SequencedMessage[]>(roomIds.map((id) => [id, []]));
    if (roomIds.length === 0) {
      return pages;
    }
    for (const sequenced of await this.messages.firstOfRooms(roomIds, opts)) {
      pages.get(sequenced.message.roomId)?.push(sequenced);
    }
    for (const page of pages.values()) {
      page.sort((a, b) => a.seq - b.seq);
    }
    return pages;
  }

  /**
   * The position (the room's seq) a `Message.cursor` of `roomId` names: where `messageAdded(after:)`
   * resumes. A malformed cursor or one of another room is BAD_USER_INPUT naming `after`.
   */
  seqOfCursor(roomId: string, cursor: string): number {
    return decodeMessageCursor(cursor, roomId);
  }

  async get(caller: MaybeCaller, id: string): Promise<Message> {
    requireCaller(caller);
    const [message] = await this.findByIds([id]);
    if (!message) {
      throw NotFound('Message');
    }
    return message;
  }

  /** Messages by id in one statement (DataLoader batches, node(id:)). */
  async findByIds(ids: readonly string[]): Promise<Message[]> {
    const valid = ids.filter((id) => isId('message', id));
    return this.messages.findByIds(valid);
  }

  /**
   * Sends a message (REST and GraphQL alike). The room's row is locked by the sequence increment, so
   * concurrent sends to one room commit one after the other, in seq order; the event is published
   * after the commit and carries the seq so every instance can deliver in that order.
   */
  async send(caller: MaybeCaller, roomId: string, input: SendMessageInput): Promise<Message> {
    requireCaller(caller);
    if (!hasRole(caller, Role.USER)) {
      throw Forbidden('Guests may not send messages');
    }
    if (!isId('room', roomId)) {
      throw NotFound('Room');
    }
    return this.db.transaction(async (tx) => {
      const { manager } = tx;
      const taken = await this.roomRows.takeNextSeq(manager, roomId);
      if (!taken) {
        throw NotFound('Room');
      }
      const author = await this.users.findAnyById(manager, caller.userId);
      const { seq } = taken;
      // taken under the lock, so created_at follows seq within a room
      const message: Message = {
        id: newId('message'),
        roomId,
        authorId: caller.userId,
        content: input.content,
        createdAt: nowIso(),
        seq,
        cursor: encodeMessageCursor(roomId, seq),
      };
      await this.messages.insert(manager, message, seq);
      const event: MessageEvent = {
        ...message,
        room: taken.room,
        author,
      };
      await this.changes.record(tx, { type: 'message.sent', message, event, actor: caller });
      return message;
    });
  }

  /** `after` of the REST list: the id of a message of this room. */
  private async seqOf(roomId: string, after: unknown): Promise<number> {
    const invalid = () =>
      BadRequest('Invalid query parameters', [
        { field: 'after', message: 'after must be the id of a message in this room' },
      ]);
    if (!isId('message', after)) {
      throw invalid();
    }
    const seq = await this.messages.seqOf(after, roomId);
    if (seq === undefined) {
      throw invalid();
    }
    return seq;
  }
}
