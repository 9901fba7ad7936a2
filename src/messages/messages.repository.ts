import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import type { ListQuery } from '../common/list-query.js';
import { DatabaseService } from '../database/database.service.js';
import { restPage } from '../database/page-reader.js';
import { SqlTexts } from '../database/sql-texts.js';
import type { PageValue } from '../database/connection-value.js';
import type { Message } from '../domain/message.js';
import { MESSAGE_COLUMNS, messageFromRow, type MessageRow } from './messages.row.js';

/** Messages sort by their room sequence: commit order, which is also created_at order in a room. */
const SORT_COLUMNS = { created_at: 'seq' };

/**
 * The one owner of `messages` SQL. Reads outside a transaction are raw SQL on `db.query` (list
 * pages, the per-room pages, messages by id); `insert` runs on the caller's transaction.
 */
@Injectable()
export class MessagesRepository {
  /** The batched statements' texts, by how many rooms they read (sql-texts.ts). */
  private readonly texts = new SqlTexts();

  constructor(private readonly db: DatabaseService) {}

  private p(n: number): string {
    return this.db.p(n);
  }

  /** One REST page of a room's messages, after sequence number `afterSeq` when given. */
  async list(
    query: ListQuery,
    roomId: string,
    afterSeq: number | undefined,
    total: Promise<number>,
  ): Promise<PageValue<MessageRow>> {
    const params: unknown[] = [roomId];
    const where = [`room_id = ${this.p(1)}`];
    if (afterSeq !== undefined) {
      params.push(afterSeq);
      where.push(`seq > ${this.p(2)}`);
    }
    return restPage<MessageRow>(
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
  }

  /**
   * The first `size + 1` messages of each room in room order (seq ascending within a room, in no
   * particular order across rooms), after a sequence number when given.
   */
  async firstOfRooms(
    roomIds: readonly string[],
    opts: { size: number; afterSeq?: number },
  ): Promise<{ message: Message; seq: number }[]> {
    if (roomIds.length === 0) {
      return [];
    }
    const params: unknown[] = [];
    for (const roomId of roomIds) {
      params.push(roomId, ...(opts.afterSeq !== undefined ? [opts.afterSeq] : []), opts.size + 1);
    }
    // one LIMITed range of (room_id, seq) per room, glued with UNION ALL: the cost is the page size
    // per room, however many messages a room has (a window function would number all of them); the
    // text depends on how many rooms, and on whether a position is bound (sql-texts.ts)
    const shape = `first:${roomIds.length}:${opts.afterSeq !== undefined ? 'a' : ''}`;
    const sql = this.texts.get(shape, () => {
      const numbered: unknown[] = [];
      const parts = roomIds.map((roomId, i) => {
        numbered.push(roomId);
        let where = `room_id = ${this.p(numbered.length)}`;
        if (opts.afterSeq !== undefined) {
          numbered.push(opts.afterSeq);
          where += ` AND seq > ${this.p(numbered.length)}`;
        }
        numbered.push(opts.size + 1);
        return `SELECT * FROM (SELECT ${MESSAGE_COLUMNS} FROM messages WHERE ${where}
                ORDER BY seq ASC LIMIT ${this.p(numbered.length)}) r${i}`;
      });
      return parts.join(' UNION ALL ');
    });
    const rows = await this.db.query<MessageRow>(sql, params);
    return rows.map((row) => ({ message: messageFromRow(row), seq: Number(row.seq) }));
  }

  /** Messages by id in one statement. */
  async findByIds(ids: readonly string[]): Promise<Message[]> {
    if (ids.length === 0) {
      return [];
    }
    const params = ids.map((_, i) => this.p(i + 1)).join(', ');
    const rows = await this.db.query<MessageRow>(
      `SELECT ${MESSAGE_COLUMNS} FROM messages WHERE id IN (${params})`,
      [...ids],
    );
    return rows.map(messageFromRow);
  }

  /** The sequence number of message `id` in room `roomId`, or undefined. */
  async seqOf(id: string, roomId: string): Promise<number | undefined> {
    const rows = await this.db.query<{ seq: number | string }>(
      `SELECT seq FROM messages WHERE id = ${this.p(1)} AND room_id = ${this.p(2)}`,
      [id, roomId],
    );
    return rows[0] ? Number(rows[0].seq) : undefined;
  }

  async insert(manager: EntityManager, message: Message, seq: number): Promise<void> {
    await manager.query(
      `INSERT INTO messages (id, room_id, author_id, content, created_at, seq)
       VALUES (${[1, 2, 3, 4, 5, 6].map((n) => this.p(n)).join(', ')})`,
      [message.id, message.roomId, message.authorId, message.content, message.createdAt, seq],
    );
  }

  /** The room's last message position (0 when it has none): the end of the (room_id, seq) index. */
  async lastSeq(roomId: string): Promise<number> {
    const rows = await this.db.query<{ seq: number | string | null }>(
      `SELECT MAX(seq) AS seq FROM messages WHERE room_id = ${this.p(1)}`,
      [roomId],
    );
    return Number(rows[0]?.seq ?? 0);
  }

  /**
   * Up to `limit` messages of a room from position `fromSeq` on, in commit order (the subscription
   * replay): one range of the (room_id, seq) index.
   */
  async listFrom(roomId: string, fromSeq: number, limit: number): Promise<Message[]> {
    const rows = await this.db.query<MessageRow>(
      `SELECT ${MESSAGE_COLUMNS} FROM messages WHERE room_id = ${this.p(1)} AND seq >= ${this.p(2)}
       ORDER BY seq ASC LIMIT ${this.p(3)}`,
      [roomId, fromSeq, limit],
    );
    return rows.map(messageFromRow);
  }
}
