import { DataSource } from 'typeorm';
import { CountersRepository } from '../../src/database/counters.repository.js';
import { newId } from '../../src/common/ids.js';
import type { TestApp } from './app.js';

export interface Seeded {
  users: string[];
  rooms: string[];
  /** The user with the most orders and posts, and the room with the most messages. */
  busyUser: string;
  busyRoom: string;
}

/**
 * Bulk rows straight into the tables (multi-row INSERTs in one transaction, seconds for 100k rows),
 * then the list counters recounted: realistic sizes for plan checks. `n` users, posts, orders and
 * messages, `n / 10` rooms; one user owns a quarter of the orders and a tenth of the posts, one room
 * half of the messages; every 20th user is a GUEST, every 100th user and 50th post is deleted.
 */
/**
 * Planner statistics for the app's own tables. On PostgreSQL a bare `ANALYZE` would also read every
 * other test schema in the database (other suites' seeded rows: slow enough to time out), so only
 * the tables of the current schema are named.
 */
export async function analyzeTables(ds: DataSource): Promise<void> {
  if (ds.options.type !== 'postgres') {
    await ds.query('ANALYZE');
    return;
  }
  const tables = await ds.query<{ tablename: string }[]>(
    'SELECT tablename FROM pg_tables WHERE schemaname = current_schema()',
  );
  await ds.query(`ANALYZE ${tables.map((t) => `"${t.tablename}"`).join(', ')}`);
}

export async function seedLists(t: TestApp, n: number): Promise<Seeded> {
  const ds = t.app.get(DataSource);
  const pg = ds.options.type === 'postgres';
  const base = Date.parse('2020-01-01T00:00:00.000Z');
  const ts = (i: number) => new Date(base + i * 1000).toISOString();
  const users = Array.from({ length: n }, () => newId('user'));
  const rooms = Array.from({ length: Math.max(2, n / 10) }, () => newId('room'));
  const statuses = ['pending', 'paid', 'shipped', 'delivered', 'cancelled'];

  let run: (sql: string, params: unknown[]) => Promise<unknown> = (sql, params) =>
    ds.query(sql, params);
  async function insert(table: string, columns: string[], rows: unknown[][]) {
    const chunk = Math.floor(5000 / columns.length);
    for (let start = 0; start < rows.length; start += chunk) {
      const part = rows.slice(start, start + chunk);
      const params: unknown[] = [];
      const values = part.map((row) => {
        const marks = row.map((v) => {
          params.push(v);
          return pg ? `$${params.length}` : '?';
        });
        return `(${marks.join(', ')})`;
      });
      await run(`INSERT INTO ${table} (${columns.join(', ')}) VALUES ${values.join(', ')}`, params);
    }
  }

  await ds.transaction(async (manager) => {
    run = (sql, params) => manager.query(sql, params);
    await insert(
      'users',
      ['id', 'name', 'email', 'email_normalized', 'role', 'created_at', 'updated_at', 'deleted_at'],
      users.map((id, i) => [
        id,
        `Seed ${(i * 7919) % n} ${i}`,
        `seed${i}@example.com`,
        `seed${i}@example.com`,
        i % 20 === 0 ? 'GUEST' : i % 50 === 1 ? 'ADMIN' : 'USER',
        ts(i),
        ts(n - i),
        i % 100 === 99 ? ts(i) : null,
      ]),
    );
    await insert(
      'posts',
      ['id', 'author_id', 'title', 'body', 'created_at', 'updated_at', 'deleted_at'],
      users.map((_, i) => [
        newId('post'),
        i % 10 === 0 ? users[0] : users[i % 500],
        `Title ${(i * 104729) % n}`,
        'body',
        ts(i),
        ts(n - i),
        i % 50 === 49 ? ts(i) : null,
      ]),
    );
    await insert(
      'orders',
      ['id', 'user_id', 'status', 'items', 'total_cents', 'currency', 'created_at', 'updated_at'],
      users.map((_, i) => [
        newId('order'),
        i % 4 === 0 ? users[0] : users[i % 2000],
        statuses[i % statuses.length],
        '[{"sku":"S","quantity":1,"unit_price_cents":100}]',
        100 + ((i * 7919) % 100_000),
        'EUR',
        ts(i),
        ts(i),
      ]),
    );
    await insert(
      'rooms',
      ['id', 'name', 'created_by', 'created_at', 'last_seq'],
      rooms.map((id, i) => [id, `seed-room-${(i * 7919) % rooms.length}-${i}`, users[0], ts(i), 0]),
    );
    const seq = new Map<string, number>();
    await insert(
      'messages',
      ['id', 'room_id', 'author_id', 'content', 'created_at', 'seq'],
      users.map((_, i) => {
        const room = i % 2 === 0 ? rooms[0] : rooms[i % rooms.length];
        const s = (seq.get(room) ?? 0) + 1;
        seq.set(room, s);
        return [newId('message'), room, users[i % 500], `m${i}`, ts(i), s];
      }),
    );
    for (const [room, last] of seq) {
      await run(`UPDATE rooms SET last_seq = ${pg ? '$1' : '?'} WHERE id = ${pg ? '$2' : '?'}`, [
        last,
        room,
      ]);
    }
  });
  await t.app.get(CountersRepository).reconcile(true);
  await analyzeTables(ds);
  return { users, rooms, busyUser: users[0], busyRoom: rooms[0] };
}
