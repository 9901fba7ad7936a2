import { describe, expect, it } from 'vitest';
import { BadRequest, DomainError } from '../common/errors.js';
import { newId } from '../common/ids.js';
import { linkHeader, parseListQuery } from '../common/list-query.js';
import {
  decodeCursor,
  decodeMessageCursor,
  encodeCursor,
  encodeMessageCursor,
  keysetAfterSql,
  keysetParams,
  keysetSql,
  orderBySql,
  orderKeyOf,
  pageWindow,
  windowShape,
} from './paging.js';

const cols = { created_at: 'created_at', name: 'name' };
const q = (n: number) => `$${n}`;
const invalid = () => BadRequest('Invalid query parameters', [{ field: 'cursor', message: 'x' }]);
const b64 = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64url');

describe('cursors', () => {
  it('round-trip one and several sort values as base64url of [orderKey, value, id]', () => {
    const key = orderKeyOf('users', [{ field: 'created_at', desc: false }]);
    expect(key).toBe('users:created_at');
    const one = encodeCursor(key, ['2026-01-01T00:00:00.000Z'], 'usr_1');
    expect(one).toMatch(/^[A-Za-z0-9_-]+$/);
    expect(JSON.parse(Buffer.from(one, 'base64url').toString())).toEqual([
      'users:created_at',
      '2026-01-01T00:00:00.000Z',
      'usr_1',
    ]);
    expect(decodeCursor(one, key, 1, invalid)).toEqual({
      values: ['2026-01-01T00:00:00.000Z'],
      id: 'usr_1',
    });
    const two = encodeCursor('users:-name,created_at', ['Ann', 'x'], 'usr_2');
    expect(decodeCursor(two, 'users:-name,created_at', 2, invalid)).toEqual({
      values: ['Ann', 'x'],
      id: 'usr_2',
    });
  });

  it('accept the cursors issued before the paging module, byte for byte', () => {
    // REST Link cursors, GraphQL connection cursors (users, posts, orders, rooms, messages, search)
    expect(encodeCursor('users:-name,created_at', ['Ann', 'x'], 'usr_2')).toBe(
      b64(['users:-name,created_at', ['Ann', 'x'], 'usr_2']),
    );
    for (const [key, value, id] of [
      ['users:name', 'Zoë', 'usr_1'],
      ['posts:created_at', '2026-01-01T00:00:00.000Z', 'pst_1'],
      ['created_at', '2026-01-01T00:00:00.000Z', 'ord_1'],
      ['seq', 7, 'msg_1'],
      ['users:search', 40, 'usr_3'],
    ] as const) {
      const old = b64([key, value, id]);
      expect(encodeCursor(key, [value], id)).toBe(old);
      expect(pageWindow({ after: old }, key).after).toEqual([value, id]);
    }
    expect(encodeMessageCursor('room_1', 3)).toBe(b64(['msg', 'room_1', 3]));
  });

  it('refuse garbage and cursors of another list or ordering', () => {
    const one = encodeCursor('users:name', ['Ann'], 'usr_1');
    for (const [cursor, key, width] of [
      [one, 'users:-name', 1],
      [one, 'posts:name', 1],
      [one, 'users:name', 2],
      ['bm9wZQ', 'users:name', 1],
      ['not a cursor', 'users:name', 1],
      [b64({ a: 1 }), 'users:name', 1],
      [b64(['users:name', { v: 1 }, 'usr_1']), 'users:name', 1],
      [b64(['users:name', 'Ann', 5]), 'users:name', 1],
      ['x'.repeat(500), 'users:name', 1],
    ] as const) {
      expect(() => decodeCursor(cursor, key, width, invalid)).toThrow(DomainError);
    }
  });

  it('name the GraphQL argument of a bad cursor (BAD_USER_INPUT)', () => {
    const other = encodeCursor('users:created_at', ['2026-01-01T00:00:00.000Z'], 'usr_1');
    try {
      pageWindow({ before: other }, 'users:name');
      expect.unreachable();
    } catch (err) {
      expect(err).toBeInstanceOf(DomainError);
      expect((err as DomainError).code).toBe('bad_request');
      expect((err as DomainError).details).toEqual([
        { field: 'before', message: expect.any(String) },
      ]);
    }
  });

  it('read a message cursor of its room only', () => {
    const [room, other] = [newId('room'), newId('room')];
    const cursor = encodeMessageCursor(room, 3);
    expect(decodeMessageCursor(cursor, room)).toBe(3);
    expect(() => decodeMessageCursor(cursor, other)).toThrow(DomainError);
    expect(() => decodeMessageCursor(b64(['msg', room, 0]), room)).toThrow(DomainError);
    expect(() => decodeMessageCursor(encodeCursor('seq', [3], 'msg_1'), room)).toThrow(DomainError);
  });
});

describe('pageWindow', () => {
  it('defaults to the first 20 and reads last as backwards', () => {
    expect(pageWindow({}, 'k')).toEqual({
      size: 20,
      backward: false,
      after: undefined,
      before: undefined,
    });
    expect(pageWindow({ last: 5 }, 'k')).toMatchObject({ size: 5, backward: true });
  });

  it('rejects out-of-range counts and first with last', () => {
    expect(() => pageWindow({ first: 101 }, 'k')).toThrow(DomainError);
    expect(() => pageWindow({ first: -1 }, 'k')).toThrow(DomainError);
    expect(() => pageWindow({ first: 1, last: 1 }, 'k')).toThrow(DomainError);
  });
});

describe('keysetSql', () => {
  it('bounds forward pages with row comparisons in the ordering direction', () => {
    const params: unknown[] = ['role'];
    const window = pageWindow({ first: 2, after: encodeCursor('k', ['b'], 'id2') }, 'k');
    expect(keysetSql(window, 'name', false, q, params)).toEqual({
      where: ['(name, id) > ($2, $3)'],
      orderBy: 'name ASC, id ASC',
      limit: 3,
    });
    expect(params).toEqual(['role', 'b', 'id2']);
  });

  it('scans backwards (and flips for DESC orderings)', () => {
    const window = pageWindow({ last: 2, before: encodeCursor('k', ['b'], 'id2') }, 'k');
    expect(keysetSql(window, 'name', false, q, [])).toMatchObject({
      where: ['(name, id) < ($1, $2)'],
      orderBy: 'name DESC, id DESC',
    });
    expect(keysetSql(window, 'name', true, q, [], 'u')).toMatchObject({
      where: ['(u.name, u.id) > ($1, $2)'],
      orderBy: 'u.name ASC, u.id ASC',
    });
  });
});

describe('keysetParams and windowShape', () => {
  it('binds what keysetSql binds, in its order; the shape names what its text depends on', () => {
    const after = encodeCursor('k', ['a'], 'id1');
    const before = encodeCursor('k', ['z'], 'id9');
    const both = pageWindow({ first: 2, after }, 'k');
    Object.assign(both, { before: ['z', 'id9'] });
    const params: unknown[] = [];
    keysetSql(both, 'name', false, q, params);
    expect(keysetParams(both)).toEqual(params);
    expect(params).toEqual(['a', 'id1', 'z', 'id9']);
    expect(windowShape(both)).toBe('2faz');
    expect(windowShape(pageWindow({ last: 5, before }, 'k'))).toBe('5bz');
    // the same shape for other positions: the text is the same, only the values differ
    expect(windowShape(pageWindow({ first: 2, after: encodeCursor('k', ['q'], 'id5') }, 'k'))).toBe(
      windowShape(pageWindow({ first: 2, after }, 'k')),
    );
  });
});

describe('orderBySql', () => {
  it('whitelists columns and ends with the id tie-break in the last direction', () => {
    expect(orderBySql([{ field: 'name', desc: true }], { name: 'name' })).toBe(
      'name DESC, id DESC',
    );
  });
});

describe('keysetAfterSql', () => {
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
