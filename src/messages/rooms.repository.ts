import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { DatabaseService } from '../database/database.service.js';
import { readPage, type ListRequest } from '../database/page-reader.js';
import { mapPage, type PageValue } from '../database/connection-value.js';
import type { Room } from '../domain/message.js';
import { ROOM_COLUMNS, roomFromRow, type RoomRow } from './messages.row.js';

const SORT_COLUMNS = { created_at: 'created_at', name: 'name' };

/**
 * The one owner of `rooms` SQL. Reads outside a transaction are raw SQL on `db.query` (rooms by id,
 * list pages); every method taking `manager` runs on the caller's transaction.
 */
@Injectable()
export class RoomsRepository {
  constructor(private readonly db: DatabaseService) {}

  private p(n: number): string {
    return this.db.p(n);
  }

  /**
   * A page of rooms, for REST and GraphQL alike: the paging module reads it
   * (src/database/page-reader.ts); `total` comes from the counters.
   */
  async page(request: ListRequest, total: () => Promise<number>): Promise<PageValue<Room>> {
    const page = await readPage<RoomRow>(
      this.db,
      {
        list: 'rooms',
        columns: ROOM_COLUMNS,
        from: 'rooms',
        where: [],
        params: [],
        sortColumns: SORT_COLUMNS,
      },
      request,
      total,
    );
    return mapPage(page, roomFromRow);
  }

  /** Rooms by id in one statement. */
  async findByIds(ids: readonly string[]): Promise<Room[]> {
    if (ids.length === 0) {
      return [];
    }
    const params = ids.map((_, i) => this.p(i + 1)).join(', ');
    const rows = await this.db.query<RoomRow>(
      `SELECT ${ROOM_COLUMNS} FROM rooms WHERE id IN (${params})`,
      [...ids],
    );
    return rows.map(roomFromRow);
  }

  /**
   * The last message sequence number of every room that has messages (the event sequencer's start
   * at boot). A room without messages is left out: the sequencer starts an unknown room at 1, what
   * `last_seq` 0 would give, and a million empty rooms would otherwise sit in its map (~150 MB).
   */
  async lastSeqs(): Promise<{ id: string; lastSeq: number }[]> {
    const rows = await this.db.query<{ id: string; last_seq: number | string }>(
      'SELECT id, last_seq FROM rooms WHERE last_seq > 0',
    );
    return rows.map((row) => ({ id: row.id, lastSeq: Number(row.last_seq) }));
  }

  /** Inserts the room (no messages yet); a taken name fails with the dialect's unique violation. */
  async insert(manager: EntityManager, room: Room, createdBy: string): Promise<void> {
    await manager.query(
      `INSERT INTO rooms (id, name, created_by, created_at, last_seq)
       VALUES (${this.p(1)}, ${this.p(2)}, ${this.p(3)}, ${this.p(4)}, 0)`,
      [room.id, room.name, createdBy, room.createdAt],
    );
  }

  /**
   * Takes the room's next message sequence number: the increment locks the room's row until the
   * transaction ends, so sends to one room commit one after the other. Undefined for no such room.
   */
  async takeNextSeq(
    manager: EntityManager,
    roomId: string,
  ): Promise<{ room: Room; seq: number } | undefined> {
    await manager.query(`UPDATE rooms SET last_seq = last_seq + 1 WHERE id = ${this.p(1)}`, [
      roomId,
    ]);
    const [row] = await manager.query<(RoomRow & { last_seq: number | string })[]>(
      `SELECT ${ROOM_COLUMNS}, last_seq FROM rooms WHERE id = ${this.p(1)}`,
      [roomId],
    );
    return row ? { room: roomFromRow(row), seq: Number(row.last_seq) } : undefined;
  }
}
