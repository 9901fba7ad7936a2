import { createRequire } from 'node:module';
import { afterAll, describe, expect, it } from 'vitest';
import { rowObjects } from './sqlite-rows.js';

/** The part of better-sqlite3 this test uses (the package ships no types). */
interface Statement {
  all(): unknown[];
  raw(toggle: boolean): Statement;
  columns(): { name: string }[];
}
const Database = createRequire(import.meta.url)('better-sqlite3') as new (path: string) => {
  exec(sql: string): void;
  prepare(sql: string): Statement;
  close(): void;
};

describe('rowObjects (raw SQLite rows made objects)', () => {
  const db = new Database(':memory:');
  db.exec(`CREATE TABLE t (id TEXT PRIMARY KEY, n INTEGER, r REAL, b BLOB, z TEXT);
           INSERT INTO t VALUES ('a', 1, 1.5, x'0102', NULL), ('b', -7, 0.25, NULL, 'zz');
           CREATE TABLE u (id TEXT PRIMARY KEY, t_id TEXT, n INTEGER);
           INSERT INTO u VALUES ('x', 'a', 42);`);
  afterAll(() => db.close());

  /** The rows as better-sqlite3 makes objects, and as rowObjects makes them from raw mode. */
  function both(sql: string): [unknown[], unknown[]] {
    const own = db.prepare(sql).all();
    const raw = db.prepare(sql).raw(true);
    const columns = raw.columns().map((c) => c.name);
    return [own, rowObjects(raw.all(), columns)];
  }

  it('gives the same keys, key order and values as better-sqlite3 for every column type', () => {
    const [own, ours] = both('SELECT id, n, r, b, z, n * 2 AS doubled FROM t ORDER BY id');
    expect(ours).toEqual(own);
    expect(ours.map((row) => Object.keys(row as object))).toEqual(
      own.map((row) => Object.keys(row as object)),
    );
    expect((ours[0] as { b: Buffer }).b).toBeInstanceOf(Buffer);
  });

  it('keeps the later value of a duplicated column name, as better-sqlite3 does', () => {
    const [own, ours] = both('SELECT t.id, t.n, u.id, u.n FROM t JOIN u ON u.t_id = t.id');
    expect(own).toEqual([{ id: 'x', n: 42 }]);
    expect(ours).toEqual(own);
  });

  it('answers no rows as an empty list', () => {
    const [own, ours] = both("SELECT id FROM t WHERE id = 'none'");
    expect(ours).toEqual(own);
    expect(ours).toEqual([]);
  });
});
