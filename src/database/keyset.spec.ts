import { describe, expect, it } from 'vitest';
import { DomainError } from '../common/errors.js';
import { decodeListCursor, encodeListCursor, keysetAfterSql, orderKeyOf } from './keyset.js';
import { linkHeader, parseListQuery } from '../common/list-query.js';

const cols = { created_at: 'created_at', name: 'name' };
const q = (n: number) => `$${n}`;

describe('keyset cursors', () => {
  it('round-trips one and several sort values, in the GraphQL cursor format for one', () => {
    const key = orderKeyOf('users', [{ field: 'created_at', desc: false }]);
    expect(key).toBe('users:created_at');
    const one = encodeListCursor(key, ['2026-01-01T00:00:00.000Z'], 'usr_1');
    expect(JSON.parse(Buffer.from(one, 'base64url').toString())).toEqual([
      'users:created_at',
      '2026-01-01T00:00:00.000Z',
      'usr_1',
    ]);
    expect(decodeListCursor(one, key, 1)).toEqual({
      values: ['2026-01-01T00:00:00.000Z'],
      id: 'usr_1',
    });
    const two = encodeListCursor('users:-name,created_at', ['Ann', 'x'], 'usr_2');
    expect(decodeListCursor(two, 'users:-name,created_at', 2)).toEqual({
      values: ['Ann', 'x'],
      id: 'usr_2',
    });
  });

  it('refuses a cursor of another list or ordering, naming cursor', () => {
    const one = encodeListCursor('users:name', ['Ann'], 'usr_1');
    for (const [cursor, key] of [
      [one, 'users:-name'],
      [one, 'posts:name'],
      ['bm9wZQ', 'users:name'],
    ] as const) {
      try {
        decodeListCursor(cursor, key, 1);
        expect.unreachable();
      } catch (err) {
        expect((err as DomainError).code).toBe('bad_request');
        expect((err as DomainError).details?.[0]?.field).toBe('cursor');
      }
    }
  });

  it('uses a row-value comparison when every term has one direction', () => {
    const params: unknown[] = ['USER'];
    const sql = keysetAfterSql(
      [{ field: 'name', desc: true }],
      cols,
      { values: ['Bob'], id: 'usr_9' },
      q,
      params,
    );
    expect(sql).toBe('(name, id) < ($2, $3)');
    expect(params).toEqual(['USER', 'Bob', 'usr_9']);
  });

  it('expands mixed directions into ORs (id follows the last term)', () => {
    const params: unknown[] = [];
    const sql = keysetAfterSql(
      [
        { field: 'name', desc: false },
        { field: 'created_at', desc: true },
      ],
      cols,
      { values: ['Bob', 't1'], id: 'usr_9' },
      q,
      params,
    );
    expect(sql).toBe(
      '((name > $1) OR (name = $2 AND created_at < $3) OR (name = $4 AND created_at = $5 AND id < $6))',
    );
    expect(params).toEqual(['Bob', 'Bob', 't1', 'Bob', 't1', 'usr_9']);
  });
});

describe('page depth cap and links', () => {
  const spec = { sortFields: ['created_at'], defaultSort: [], filters: {} };

  it('refuses page * limit > 10000 without a cursor, allows it with one', () => {
    expect(parseListQuery({ page: '100', limit: '100' }, spec).page).toBe(100);
    expect(() => parseListQuery({ page: '101', limit: '100' }, spec)).toThrow(DomainError);
    expect(parseListQuery({ page: '101', limit: '100', cursor: 'abc' }, spec).cursor).toBe('abc');
  });

  it('leaves out prev and last deeper than the cap, keeps the cursor next', () => {
    const link = linkHeader(
      'https://x',
      '/api/v1/users?page=9000&limit=20&cursor=old',
      { page: 9000, limit: 20, total: 1_000_000 },
      'newcursor',
    );
    expect(link).toBe(
      '<https://x/api/v1/users?page=1&limit=20>; rel="first", ' +
        '<https://x/api/v1/users?page=9001&limit=20&cursor=newcursor>; rel="next"',
    );
    const shallow = linkHeader(
      'https://x',
      '/api/v1/users?page=3&limit=20&cursor=old',
      { page: 3, limit: 20, total: 100 },
      null,
    );
    expect(shallow).toBe(
      '<https://x/api/v1/users?page=1&limit=20>; rel="first", ' +
        '<https://x/api/v1/users?page=2&limit=20>; rel="prev", ' +
        '<https://x/api/v1/users?page=5&limit=20>; rel="last"',
    );
  });
});
