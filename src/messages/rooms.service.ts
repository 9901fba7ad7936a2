import { Injectable } from '@nestjs/common';
import { hasRole, type Caller, type MaybeCaller } from '../identity/caller.js';
import { Role } from '../identity/role.js';
import { Conflict, Forbidden, NotFound, Unauthorized } from '../common/errors.js';
import { isId, newId, nowIso } from '../common/ids.js';
import { parseListQuery, type ListSpec, type Page, type PageArgs } from '../common/list-query.js';
import { ChangeRecord } from '../changes/change-record.js';
import { CountersRepository, CountKeys } from '../database/counters.repository.js';
import { DatabaseService } from '../database/database.service.js';
import { encodeCursor, pageWindow } from '../database/paging.js';
import { connectionFromRows, type ConnectionValue } from '../database/connection-value.js';
import type { CreateRoomInput } from './dto/message.inputs.js';
import type { Room } from '../domain/message.js';
import { RoomsRepository } from './rooms.repository.js';

export const ROOM_LIST_SPEC: ListSpec<never> = {
  sortFields: ['created_at', 'name'],
  defaultSort: [{ field: 'created_at', desc: false }],
  filters: {},
};

/** Cursor key of the `rooms` connection (kept as issued: docs/lists.md, "Paging module"). */
const ROOM_KEY = 'created_at';

/** Rooms: every authenticated caller reads them; USER and ADMIN create them (docs/contract.md section 7). */
@Injectable()
export class RoomsService {
  constructor(
    private readonly db: DatabaseService,
    private readonly counters: CountersRepository,
    private readonly repository: RoomsRepository,
    private readonly changes: ChangeRecord,
  ) {}

  async list(caller: MaybeCaller, rawQuery: Record<string, unknown>): Promise<Page<Room>> {
    requireCaller(caller);
    const query = parseListQuery(rawQuery, ROOM_LIST_SPEC);
    return this.repository.list(query, this.counters.get(CountKeys.rooms()));
  }

  /** GraphQL `rooms`: a keyset page in creation order, the total from the counters (O(1)). */
  async connection(
    caller: MaybeCaller,
    args: Pick<PageArgs, 'first' | 'after'>,
  ): Promise<ConnectionValue<Room>> {
    requireCaller(caller);
    const window = pageWindow({ first: args.first, after: args.after }, ROOM_KEY);
    const rows = await this.repository.page(window);
    return connectionFromRows(rows, window, (r) => encodeCursor(ROOM_KEY, [r.createdAt], r.id), {
      totalCount: () => this.counters.get(CountKeys.rooms()),
      existsBeyond: async () => window.after !== undefined,
    });
  }

  async get(caller: MaybeCaller, id: string): Promise<Room> {
    requireCaller(caller);
    const room = await this.findById(id);
    if (!room) {
      throw NotFound('Room');
    }
    return room;
  }

  async findById(id: string): Promise<Room | undefined> {
    return (await this.findByIds([id]))[0];
  }

  /** Rooms by id in one statement (DataLoader batches land here). */
  async findByIds(ids: readonly string[]): Promise<Room[]> {
    const valid = ids.filter((id) => isId('room', id));
    return this.repository.findByIds(valid);
  }

  async create(caller: MaybeCaller, input: CreateRoomInput): Promise<Room> {
    requireCaller(caller);
    if (!hasRole(caller, Role.USER)) {
      throw Forbidden('Guests may not create rooms');
    }
    const room: Room = { id: newId('room'), name: input.name, createdAt: nowIso() };
    try {
      await this.db.transaction(async (tx) => {
        await this.repository.insert(tx.manager, room, caller.userId);
        await this.changes.record(tx, { type: 'room.created', room, actor: caller });
      });
    } catch (err) {
      if (this.db.isUniqueViolation(err)) {
        throw Conflict('A room with this name already exists', [
          { field: 'name', message: 'name is already in use' },
        ]);
      }
      throw err;
    }
    return room;
  }
}

export function requireCaller(caller: MaybeCaller): asserts caller is Caller {
  if (!caller) {
    throw Unauthorized();
  }
}
