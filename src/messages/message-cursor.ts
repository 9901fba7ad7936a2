import { BadRequest } from '../common/errors.js';
import { isId } from '../common/ids.js';

/**
 * `Message.cursor`: where a message stands in its room, opaque to clients. It is base64url of
 * `["msg", roomId, seq]`, `seq` being the room's commit order (rooms.last_seq at the send), so a cursor
 * names its room and a position in it, and needs no look-up to be understood.
 */
export function encodeMessageCursor(roomId: string, seq: number): string {
  return Buffer.from(JSON.stringify(['msg', roomId, seq])).toString('base64url');
}

/**
 * The position (seq) a cursor of `roomId` names. A malformed cursor or one of another room is
 * BAD_USER_INPUT naming `argName`.
 */
export function decodeMessageCursor(cursor: string, roomId: string, argName = 'after'): number {
  let parsed: unknown;
  if (cursor.length <= 200 && /^[A-Za-z0-9_-]+$/.test(cursor)) {
    try {
      parsed = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
    } catch {
      parsed = undefined;
    }
  }
  const valid =
    Array.isArray(parsed) &&
    parsed.length === 3 &&
    parsed[0] === 'msg' &&
    isId('room', parsed[1]) &&
    Number.isSafeInteger(parsed[2]) &&
    (parsed[2] as number) >= 1;
  if (!valid) {
    throw BadRequest(`Invalid cursor in ${argName}`, [
      { field: argName, message: `${argName} is not a message cursor (Message.cursor)` },
    ]);
  }
  const [, cursorRoom, seq] = parsed as [string, string, number];
  if (cursorRoom !== roomId) {
    throw BadRequest(`Invalid cursor in ${argName}`, [
      { field: argName, message: `${argName} is the cursor of a message of another room` },
    ]);
  }
  return seq;
}
