import { Injectable } from '@nestjs/common';
import { hasRole, type Caller, type MaybeCaller } from '../identity/caller.js';
import { Role } from '../identity/role.js';
import { Conflict, Forbidden, NotFound, Unauthorized } from '../common/errors.js';
import { isId, newId, nowIso } from '../common/ids.js';
import { parseListQuery, type ListSpec, type PageRequest } from '../common/list-query.js';
import { ChangeRecord } from '../changes/change-record.js';
import { CountersRepository, CountKeys } from '../database/counters.repository.js';
import { DatabaseService } from '../database/database.service.js';
import type { PageValue } from '../database/connection-value.js';
import type { CreateRoomInput } from './dto/message.inputs.js';
import type { Room } from '../domain/message.js';
import { RoomsRepository } from './rooms.repository.js';

export const ROOM_LIST_SPEC: ListSpec<never> = {
  sortFields: ['created_at', 'name'],
  defaultSort: [{ field: 'created_at', desc: false }],
  filters: {},
};

/** Rooms: every authenticated caller reads them; USER and ADMIN create them (docs/contract.md section 7). */
@Injectable()
export class RoomsService {
  constructor(
    private readonly db: DatabaseService,
    private readonly counters: CountersRepository,
    private readonly repository: RoomsRepository,
    private readonly changes: ChangeRecord,
  ) {}

  /**
   * The rooms list, REST and GraphQL alike (docs/lists.md, "Paging module"): a REST page (page
   * number or keyset `cursor`, `sort`) or a GraphQL window (`first`/`after`, creation order); the
   * total from the counters (O(1)).
   */
  async page(caller: MaybeCaller, request: PageRequest): Promise<PageValue<Room>> {
    requireCaller(caller);
    const total = () => this.counters.get(CountKeys.rooms());
    if ('rest' in request) {
      return this.repository.page({ query: parseListQuery(request.rest, ROOM_LIST_SPEC) }, total);
    }
    return this.repository.page(request, total);
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
