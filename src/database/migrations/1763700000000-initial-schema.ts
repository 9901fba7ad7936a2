import { MigrationInterface, QueryRunner, Table, TableIndex } from 'typeorm';

const id = (name = 'id') => ({ name, type: 'varchar', length: '30', isPrimary: name === 'id' });
const ref = (name: string, nullable = false) => ({
  name,
  type: 'varchar',
  length: '30',
  isNullable: nullable,
});
// RFC 3339 UTC with milliseconds, stored as text: sorts correctly and keeps the milliseconds that SQLite's
// datetime functions would drop; the same on both dialects.
const ts = (name: string, nullable = false) => ({
  name,
  type: 'varchar',
  length: '24',
  isNullable: nullable,
});

/** Dialect-neutral (QueryRunner/Table API): the same migration runs on SQLite and PostgreSQL. */
export class InitialSchema1763700000000 implements MigrationInterface {
  name = 'InitialSchema1763700000000';

  async up(q: QueryRunner): Promise<void> {
    await q.createTable(
      new Table({
        name: 'users',
        columns: [
          id(),
          { name: 'name', type: 'varchar', length: '100' },
          { name: 'email', type: 'varchar', length: '254', isNullable: true },
          { name: 'email_normalized', type: 'varchar', length: '254', isNullable: true },
          { name: 'role', type: 'varchar', length: '5' },
          { name: 'age', type: 'integer', isNullable: true },
          { name: 'password_hash', type: 'varchar', length: '255', isNullable: true },
          ts('created_at'),
          ts('updated_at'),
          ts('deleted_at', true),
        ],
      }),
    );
    await q.createIndices('users', [
      // unique among live users only: a soft-deleted user's email becomes free again
      new TableIndex({
        name: 'uq_users_email_live',
        columnNames: ['email_normalized'],
        isUnique: true,
        where: 'deleted_at IS NULL',
      }),
      new TableIndex({ name: 'ix_users_created', columnNames: ['created_at', 'id'] }),
      new TableIndex({ name: 'ix_users_updated', columnNames: ['updated_at', 'id'] }),
      new TableIndex({ name: 'ix_users_name', columnNames: ['name', 'id'] }),
      new TableIndex({ name: 'ix_users_role', columnNames: ['role', 'created_at'] }),
    ]);

    await q.createTable(
      new Table({
        name: 'api_keys',
        columns: [
          id(),
          ref('user_id'),
          { name: 'name', type: 'varchar', length: '100' },
          { name: 'prefix', type: 'varchar', length: '16' },
          { name: 'key_hash', type: 'varchar', length: '64' },
          { name: 'role', type: 'varchar', length: '5' },
          ts('expires_at', true),
          ts('last_used_at', true),
          ts('revoked_at', true),
          ts('created_at'),
        ],
        foreignKeys: [
          { columnNames: ['user_id'], referencedTableName: 'users', referencedColumnNames: ['id'] },
        ],
      }),
    );
    await q.createIndices('api_keys', [
      new TableIndex({ name: 'uq_api_keys_hash', columnNames: ['key_hash'], isUnique: true }),
      new TableIndex({ name: 'ix_api_keys_user', columnNames: ['user_id', 'created_at'] }),
    ]);

    await q.createTable(
      new Table({
        name: 'refresh_tokens',
        columns: [
          id(),
          ref('user_id'),
          { name: 'token_hash', type: 'varchar', length: '64' },
          ts('expires_at'),
          ts('used_at', true),
          ts('created_at'),
        ],
        foreignKeys: [
          { columnNames: ['user_id'], referencedTableName: 'users', referencedColumnNames: ['id'] },
        ],
      }),
    );
    await q.createIndex(
      'refresh_tokens',
      new TableIndex({
        name: 'uq_refresh_tokens_hash',
        columnNames: ['token_hash'],
        isUnique: true,
      }),
    );

    await q.createTable(
      new Table({
        name: 'posts',
        columns: [
          id(),
          ref('author_id'),
          { name: 'title', type: 'varchar', length: '200' },
          { name: 'body', type: 'text' },
          ts('created_at'),
          ts('updated_at'),
          ts('deleted_at', true),
        ],
        foreignKeys: [
          {
            columnNames: ['author_id'],
            referencedTableName: 'users',
            referencedColumnNames: ['id'],
          },
        ],
      }),
    );
    await q.createIndices('posts', [
      new TableIndex({ name: 'ix_posts_author', columnNames: ['author_id', 'created_at', 'id'] }),
      new TableIndex({ name: 'ix_posts_created', columnNames: ['created_at', 'id'] }),
      new TableIndex({ name: 'ix_posts_updated', columnNames: ['updated_at', 'id'] }),
      new TableIndex({ name: 'ix_posts_title', columnNames: ['title', 'id'] }),
    ]);

    await q.createTable(
      new Table({
        name: 'orders',
        columns: [
          id(),
          ref('user_id'),
          { name: 'status', type: 'varchar', length: '9' },
          // [{sku, quantity, unit_price_cents}] as JSON text: read and written whole with the order
          { name: 'items', type: 'text' },
          { name: 'total_cents', type: 'bigint' },
          { name: 'currency', type: 'varchar', length: '3' },
          ts('created_at'),
          ts('updated_at'),
        ],
        foreignKeys: [
          { columnNames: ['user_id'], referencedTableName: 'users', referencedColumnNames: ['id'] },
        ],
      }),
    );
    await q.createIndices('orders', [
      new TableIndex({ name: 'ix_orders_user', columnNames: ['user_id', 'created_at', 'id'] }),
      new TableIndex({
        name: 'ix_orders_user_status',
        columnNames: ['user_id', 'status', 'created_at'],
      }),
    ]);

    await q.createTable(
      new Table({
        name: 'rooms',
        columns: [
          id(),
          { name: 'name', type: 'varchar', length: '100' },
          ref('created_by'),
          ts('created_at'),
        ],
      }),
    );
    await q.createIndices('rooms', [
      new TableIndex({ name: 'uq_rooms_name', columnNames: ['name'], isUnique: true }),
      new TableIndex({ name: 'ix_rooms_created', columnNames: ['created_at', 'id'] }),
    ]);

    await q.createTable(
      new Table({
        name: 'messages',
        columns: [
          id(),
          ref('room_id'),
          ref('author_id'),
          { name: 'content', type: 'varchar', length: '4000' },
          ts('created_at'),
        ],
        foreignKeys: [
          { columnNames: ['room_id'], referencedTableName: 'rooms', referencedColumnNames: ['id'] },
          {
            columnNames: ['author_id'],
            referencedTableName: 'users',
            referencedColumnNames: ['id'],
          },
        ],
      }),
    );
    await q.createIndex(
      'messages',
      new TableIndex({ name: 'ix_messages_room', columnNames: ['room_id', 'id'] }),
    );
  }

  async down(q: QueryRunner): Promise<void> {
    for (const table of [
      'messages',
      'rooms',
      'orders',
      'posts',
      'refresh_tokens',
      'api_keys',
      'users',
    ]) {
      await q.dropTable(table);
    }
  }
}
