import type { Message, Room } from '../domain/message.js';
import { encodeMessageCursor } from '../database/paging.js';

/** `rooms` and `messages` rows as the repositories' raw SQL reads them, and the values they hold. */
export interface RoomRow {
  id: string;
  name: string;
  created_at: string;
}

export interface MessageRow {
  id: string;
  room_id: string;
  author_id: string;
  content: string;
  created_at: string;
  seq: number | string;
}

export const ROOM_COLUMNS = 'id, name, created_at';
export const MESSAGE_COLUMNS = 'id, room_id, author_id, content, created_at, seq';

export function roomFromRow(row: RoomRow): Room {
  return { id: row.id, name: row.name, createdAt: row.created_at };
}

export function messageFromRow(row: MessageRow): Message {
  return {
    id: row.id,
    roomId: row.room_id,
    authorId: row.author_id,
    content: row.content,
    createdAt: row.created_at,
    seq: Number(row.seq),
    cursor: encodeMessageCursor(row.room_id, Number(row.seq)),
  };
}
