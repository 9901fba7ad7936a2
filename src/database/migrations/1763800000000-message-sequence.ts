import { MigrationInterface, QueryRunner, TableColumn, TableIndex } from 'typeorm';

/**
 * Per-room message sequence: `rooms.last_seq` is incremented under the room's row lock by
 * each send, and the message keeps its number in `messages.seq`. Seq order is commit order within a
 * room: subscribers get events in that order and lists sort by it (see docs/realtime.md).
 */
export class MessageSequence1763800000000 implements MigrationInterface {
  name = 'MessageSequence1763800000000';

  async up(q: QueryRunner): Promise<void> {
    await q.addColumn('rooms', new TableColumn({ name: 'last_seq', type: 'integer', default: 0 }));
    await q.addColumn('messages', new TableColumn({ name: 'seq', type: 'integer', default: 0 }));
    await q.createIndex(
      'messages',
      new TableIndex({
        name: 'uq_messages_room_seq',
        columnNames: ['room_id', 'seq'],
        isUnique: true,
      }),
    );
    await q.createIndex(
      'rooms',
      new TableIndex({ name: 'ix_rooms_name', columnNames: ['name', 'id'] }),
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await q.dropIndex('rooms', 'ix_rooms_name');
    await q.dropIndex('messages', 'uq_messages_room_seq');
    await q.dropColumn('messages', 'seq');
    await q.dropColumn('rooms', 'last_seq');
  }
}
