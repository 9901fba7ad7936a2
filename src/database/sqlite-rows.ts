/**
 * Row objects of a better-sqlite3 statement run in raw mode (rows as arrays), keyed by its column
 * names read once (`statement.columns()`). better-sqlite3's own row objects are built through V8's
 * C++ API, each column name looked up in V8's string table for every row: a 20-row page costs 34 µs
 * that way against 21 µs this way, one row 2.5 against 1.9 µs (docs/performance.md). Same keys, same
 * values, a later column of a duplicated name winning, as in better-sqlite3's objects
 * (`sqlite-rows.spec.ts` compares the two).
 */
export function rowObjects(rows: unknown[], columns: readonly string[]): Record<string, unknown>[] {
  const objects = new Array<Record<string, unknown>>(rows.length);
  for (let r = 0; r < rows.length; r++) {
    const values = rows[r] as unknown[];
    const row: Record<string, unknown> = {};
    for (let c = 0; c < columns.length; c++) {
      row[columns[c]] = values[c];
    }
    objects[r] = row;
  }
  return objects;
}
