/** A room as the services hand it out: camelCase, transport-neutral. */
export interface Room {
  id: string;
  name: string;
  createdAt: string;
}

import type { User } from './user.js';

/** A message as the services hand it out (and as events carry it). */
export interface Message {
  id: string;
  roomId: string;
  authorId: string;
  content: string;
  createdAt: string;
  /** Its room's commit order: 1, 2, 3… per room (rooms.last_seq at the send). */
  seq: number;
  /** `Message.cursor`: room and seq, opaque (src/database/paging.ts); set with `seq`. */
  cursor: string;
}

/**
 * A message as events carry it: with snapshots of its author and room taken when it was sent, so
 * that N subscribers selecting `author { name }` cost no database reads per event.
 */
export interface MessageEvent extends Message {
  author?: User;
  room?: Room;
}
