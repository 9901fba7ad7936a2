import { Injectable } from '@nestjs/common';
import { hasRole, type MaybeCaller } from '../auth/caller.js';
import { Role } from '../auth/role.js';
import { BadRequest, Forbidden, NotFound } from '../common/errors.js';
import { isId, newId, nowIso } from '../common/ids.js';
import { parseListQuery, type ListSpec, type Page } from '../common/list-query.js';
import { CountersRepository, CountKeys } from '../database/counters.repository.js';
import { DatabaseService } from '../database/database.service.js';
import { listPage } from '../database/list-page.js';
import { EventsService } from '../events/events.service.js';
import { WebhookOutbox } from '../webhooks/webhook-outbox.js';
import type { SendMessageInput } from './dto/message.inputs.js';
import type { Message, MessageEvent } from './message.js';
import { MESSAGE_CONTENT_COST } from './message.model.js';
import { USER_COLUMNS, userFromRow, type UserRow } from '../users/users.mapper.js';
import {
  MESSAGE_COLUMNS,
  ROOM_COLUMNS,
  messageFromRow,
  roomFromRow,
  toRestMessage,
  type MessageRow,
  type RoomRow,
} from './messages.mapper.js';
import { RoomsService, requireCaller } from './rooms.service.js';

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

/** Messages sort by their room sequence: commit order, which is also created_at order in a room. */
const SORT_COLUMNS = { created_at: 'seq' };

/** A message with its room sequence number (GraphQL cursors use it). */
export interface SequencedMessage {
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
    private readonly events: EventsService,
    private readonly counters: CountersRepository,
    private readonly outbox: WebhookOutbox,
  ) {}

  async list(
    caller: MaybeCaller,
    roomId: string,
    rawQuery: Record<string, unknown>,
  ): Promise<Page<Message>> {
    requireCaller(caller);
    const query = parseListQuery(rawQuery, MESSAGE_LIST_SPEC);
    await this.rooms.get(caller, roomId);
    const params: unknown[] = [roomId];
    const where = [`room_id = ${this.db.p(1)}`];
    let afterSeq = 0;
    if (rawQuery.after !== undefined) {
      afterSeq = await this.seqOf(roomId, rawQuery.after);
      params.push(afterSeq);
      where.push(`seq > ${this.db.p(2)}`);
    }
    // seq runs 1, 2, 3… without gaps in each room (send() takes the next number and inserts in one
    // transaction), so "after message #k" leaves exactly count - k messages: still O(1)
    const total = this.counters
      .get(CountKeys.messagesOfRoom(roomId))
      .then((n) => Math.max(0, n - afterSeq));
    const { rows, meta, next } = await listPage<MessageRow>(
      this.db,
      {
        list: 'messages',
        columns: MESSAGE_COLUMNS,
        from: 'messages',
        where,
        params,
        sortColumns: SORT_COLUMNS,
        uniqueSort: true,
      },
      query,
      total,
    );
    return { data: rows.map(messageFromRow), meta, next };
  }

  /**
   * The first `size + 1` messages of each room in room order (seq), optionally after a position:
   * one statement for any number of rooms (GraphQL `Room.messages`, batched by DataLoader).
   */
  async pagesForRooms(
    roomIds: readonly string[],
    opts: { size: number; afterSeq?: number },
  ): Promise<Map<string, SequencedMessage[]>> {
    const pages = new Map<string, SequencedMessage[]>(roomIds.map((id) => [id, []]));
    if (roomIds.length === 0) {
      return pages;
    }
    // one LIMITed range of (room_id, seq) per room, glued with UNION ALL: the cost is the page size
    // per room, however many messages a room has (a window function would number all of them)
    const params: unknown[] = [];
    const parts = roomIds.map((roomId, i) => {
      params.push(roomId);
      let where = `room_id = ${this.db.p(params.length)}`;
      if (opts.afterSeq !== undefined) {
        params.push(opts.afterSeq);
        where += ` AND seq > ${this.db.p(params.length)}`;
      }
      params.push(opts.size + 1);
      return `SELECT * FROM (SELECT ${MESSAGE_COLUMNS} FROM messages WHERE ${where}
                ORDER BY seq ASC LIMIT ${this.db.p(params.length)}) r${i}`;
    });
    const rows = await this.db.query<MessageRow>(parts.join(' UNION ALL '), params);
    for (const row of rows) {
      pages.get(row.room_id)?.push({ message: messageFromRow(row), seq: Number(row.seq) });
    }
    for (const page of pages.values()) {
      page.sort((a, b) => a.seq - b.seq);
    }
    return pages;
  }

  /** Messages per room: one read of their counters for all of them. */
  async countsForRooms(roomIds: readonly string[]): Promise<Map<string, number>> {
    const byKey = await this.counters.getMany(roomIds.map((id) => CountKeys.messagesOfRoom(id)));
    return new Map(roomIds.map((id) => [id, byKey.get(CountKeys.messagesOfRoom(id)) ?? 0]));
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
    if (valid.length === 0) {
      return [];
    }
    const params = valid.map((_, i) => this.db.p(i + 1)).join(', ');
    const rows = await this.db.query<MessageRow>(
      `SELECT ${MESSAGE_COLUMNS} FROM messages WHERE id IN (${params})`,
      valid,
    );
    return rows.map(messageFromRow);
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
      await manager.query(`UPDATE rooms SET last_seq = last_seq + 1 WHERE id = ${this.db.p(1)}`, [
        roomId,
      ]);
      const [room] = await manager.query<(RoomRow & { last_seq: number | string })[]>(
        `SELECT ${ROOM_COLUMNS}, last_seq FROM rooms WHERE id = ${this.db.p(1)}`,
        [roomId],
      );
      if (!room) {
        throw NotFound('Room');
      }
      const [author] = await manager.query<UserRow[]>(
        `SELECT ${USER_COLUMNS} FROM users WHERE id = ${this.db.p(1)}`,
        [caller.userId],
      );
      const seq = Number(room.last_seq);
      // taken under the lock, so created_at follows seq within a room
      const message: Message = {
        id: newId('message'),
        roomId,
        authorId: caller.userId,
        content: input.content,
        createdAt: nowIso(),
      };
      await manager.query(
        `INSERT INTO messages (id, room_id, author_id, content, created_at, seq)
         VALUES (${[1, 2, 3, 4, 5, 6].map((n) => this.db.p(n)).join(', ')})`,
        [message.id, roomId, message.authorId, message.content, message.createdAt, seq],
      );
      this.counters.add(tx, { [CountKeys.messagesOfRoom(roomId)]: 1 });
      const event: MessageEvent = {
        ...message,
        room: roomFromRow(room),
        author: author ? userFromRow(author) : undefined,
      };
      tx.afterCommit(() => this.events.messageSent(event, seq));
      await this.outbox.enqueue(tx, 'message.created', toRestMessage(message), message.authorId);
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
    const rows = await this.db.query<{ seq: number | string }>(
      `SELECT seq FROM messages WHERE id = ${this.db.p(1)} AND room_id = ${this.db.p(2)}`,
      [after, roomId],
    );
    if (!rows[0]) {
      throw invalid();
    }
    return Number(rows[0].seq);
  }
}
