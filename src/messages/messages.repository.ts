import { Injectable } from '@nestjs/common';
import { DatabaseService } from '../database/database.service.js';
import type { Message } from './message.js';
import { MESSAGE_COLUMNS, messageFromRow, type MessageRow } from './messages.mapper.js';

/** `messages` reads of the real-time paths (subscription replay). */
@Injectable()
export class MessagesRepository {
  constructor(private readonly db: DatabaseService) {}

  /**
   * Up to `limit` messages of a room from position `fromSeq` on, in commit order: one range of the
   * (room_id, seq) index.
   */
  async listFrom(roomId: string, fromSeq: number, limit: number): Promise<Message[]> {
    const rows = await this.db.query<MessageRow>(
      `SELECT ${MESSAGE_COLUMNS} FROM messages WHERE room_id = ${this.db.p(1)} AND seq >= ${this.db.p(2)}
       ORDER BY seq ASC LIMIT ${this.db.p(3)}`,
      [roomId, fromSeq, limit],
    );
    return rows.map(messageFromRow);
  }
}
