import { MigrationInterface, QueryRunner, TableIndex } from 'typeorm';

const LIVE = 'deleted_at IS NULL';

/** Every documented sort field, with and without each documented filter: `[filter,] field, id`. */
const NEW_INDEXES: Record<string, TableIndex[]> = {
  // users and posts lists only ever show live rows: partial indexes hold exactly those, so a page
  // never skips deleted rows one by one and a filter + sort is one index range
  users: ['created_at', 'updated_at', 'name'].flatMap((f) => [
    new TableIndex({ name: `ix_users_live_${f}`, columnNames: [f, 'id'], where: LIVE }),
    new TableIndex({
      name: `ix_users_live_role_${f}`,
      columnNames: ['role', f, 'id'],
      where: LIVE,
    }),
  ]),
  posts: ['created_at', 'updated_at', 'title'].flatMap((f) => [
    new TableIndex({ name: `ix_posts_live_${f}`, columnNames: [f, 'id'], where: LIVE }),
    new TableIndex({
      name: `ix_posts_live_author_${f}`,
      columnNames: ['author_id', f, 'id'],
      where: LIVE,
    }),
  ]),
  orders: [
    new TableIndex({
      name: 'ix_orders_user_status_created',
      columnNames: ['user_id', 'status', 'created_at', 'id'],
    }),
  ],
};

/** Replaced by the indexes above (they lacked `id` for the keyset order, or `deleted_at`). */
const OLD_INDEXES: Record<string, TableIndex[]> = {
  users: [
    new TableIndex({ name: 'ix_users_created', columnNames: ['created_at', 'id'] }),
    new TableIndex({ name: 'ix_users_updated', columnNames: ['updated_at', 'id'] }),
    new TableIndex({ name: 'ix_users_name', columnNames: ['name', 'id'] }),
    new TableIndex({ name: 'ix_users_role', columnNames: ['role', 'created_at'] }),
  ],
  posts: [
    new TableIndex({ name: 'ix_posts_author', columnNames: ['author_id', 'created_at', 'id'] }),
    new TableIndex({ name: 'ix_posts_created', columnNames: ['created_at', 'id'] }),
    new TableIndex({ name: 'ix_posts_updated', columnNames: ['updated_at', 'id'] }),
    new TableIndex({ name: 'ix_posts_title', columnNames: ['title', 'id'] }),
  ],
  orders: [
    new TableIndex({
      name: 'ix_orders_user_status',
      columnNames: ['user_id', 'status', 'created_at'],
    }),
  ],
};

/**
 * Indexes for every documented sort and filter of the lists (docs/performance.md, "Lists at scale"),
 * each ending in `id` so that keyset pages (`(field, id) > (?, ?)`) and their ORDER BY are one index
 * range. test/list-plans.e2e-spec.ts guards the plans with EXPLAIN.
 */
export class ListIndexes1764000000001 implements MigrationInterface {
  name = 'ListIndexes1764000000001';

  async up(q: QueryRunner): Promise<void> {
    for (const [table, indexes] of Object.entries(NEW_INDEXES)) {
      await q.createIndices(table, indexes);
    }
    for (const [table, indexes] of Object.entries(OLD_INDEXES)) {
      for (const index of indexes) {
        await q.dropIndex(table, index.name!);
      }
    }
  }

  async down(q: QueryRunner): Promise<void> {
    for (const [table, indexes] of Object.entries(OLD_INDEXES)) {
      await q.createIndices(table, indexes);
    }
    for (const [table, indexes] of Object.entries(NEW_INDEXES)) {
      for (const index of indexes) {
        await q.dropIndex(table, index.name!);
      }
    }
  }
}
