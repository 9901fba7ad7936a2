import { describe, expect, it } from 'vitest';
import { DomainError } from '../common/errors.js';
import {
  connectionFromRows,
  decodeCursor,
  encodeCursor,
  mapConnection,
  pageWindow,
} from './connection.js';
import { keysetSql } from '../database/page-window.js';

const q = (n: number) => `$${n}`;

describe('cursors', () => {
  it('round-trip the keyset position and are opaque base64url', () => {
    const cursor = encodeCursor('users:name', 'Zoë', 'usr_1');
    expect(cursor).toMatch(/^[A-Za-z0-9_-]+$/);
    expect(decodeCursor(cursor, 'users:name', 'after')).toEqual(['Zoë', 'usr_1']);
  });

  it('refuse garbage and cursors of another list or ordering (BAD_USER_INPUT naming the argument)', () => {
    const other = encodeCursor('users:created_at', '2026-01-01T00:00:00.000Z', 'usr_1');
    for (const bad of [
      other,
      'not a cursor',
      Buffer.from('{"a":1}').toString('base64url'),
      'x'.repeat(500),
    ]) {
      try {
        decodeCursor(bad, 'users:name', 'before');
        expect.unreachable(bad);
      } catch (err) {
        expect(err).toBeInstanceOf(DomainError);
        expect((err as DomainError).code).toBe('bad_request');
        expect((err as DomainError).details).toEqual([
          { field: 'before', message: expect.any(String) },
        ]);
      }
    }
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
    const window = pageWindow({ first: 2, after: encodeCursor('k', 'b', 'id2') }, 'k');
    expect(keysetSql(window, 'name', false, q, params)).toEqual({
      where: ['(name, id) > ($2, $3)'],
      orderBy: 'name ASC, id ASC',
      limit: 3,
    });
    expect(params).toEqual(['role', 'b', 'id2']);
  });

  it('scans backwards (and flips for DESC orderings)', () => {
    const window = pageWindow({ last: 2, before: encodeCursor('k', 'b', 'id2') }, 'k');
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

describe('connectionFromRows', () => {
  const rows = [1, 2, 3].map((n) => ({ id: `id${n}` }));
  const cursorOf = (r: { id: string }) => `c-${r.id}`;

  it('uses the extra row for hasNextPage and computes totalCount only when read', async () => {
    let counted = 0;
    const c = connectionFromRows(rows, pageWindow({ first: 2 }, 'k'), cursorOf, {
      totalCount: () => Promise.resolve(++counted),
    });
    expect(c.nodes.map((n) => n.id)).toEqual(['id1', 'id2']);
    expect(c.edges.map((e) => e.cursor)).toEqual(['c-id1', 'c-id2']);
    expect(c.pageInfo).toMatchObject({
      hasNextPage: true,
      hasPreviousPage: false,
      startCursor: 'c-id1',
      endCursor: 'c-id2',
    });
    expect(counted).toBe(0);
    expect(await c.totalCount).toBe(1);
  });

  it('reverses a backward scan and asks about rows beyond `before` lazily', async () => {
    const sides: string[] = [];
    const window = pageWindow({ last: 2, before: encodeCursor('k', 'x', 'id9') }, 'k');
    const c = connectionFromRows([...rows].reverse(), window, cursorOf, {
      totalCount: () => Promise.resolve(3),
      existsBeyond: (side) => {
        sides.push(side);
        return Promise.resolve(true);
      },
    });
    expect(c.nodes.map((n) => n.id)).toEqual(['id2', 'id3']);
    expect(c.pageInfo.hasPreviousPage).toBe(true);
    expect(sides).toEqual([]);
    expect(await c.pageInfo.hasNextPage).toBe(true);
    expect(sides).toEqual(['after-before']);
  });

  it('encodes cursors only when edges or cursors are read, once per row', () => {
    const encoded: string[] = [];
    const c = connectionFromRows(
      rows,
      pageWindow({ first: 2 }, 'k'),
      (r) => {
        encoded.push(r.id);
        return cursorOf(r);
      },
      { totalCount: () => Promise.resolve(3) },
    );
    expect(c.nodes.map((n) => n.id)).toEqual(['id1', 'id2']);
    expect(c.pageInfo.hasNextPage).toBe(true);
    expect(encoded).toEqual([]);
    expect(c.pageInfo.endCursor).toBe('c-id2');
    expect(c.edges.map((e) => e.cursor)).toEqual(['c-id1', 'c-id2']);
    expect(c.pageInfo.startCursor).toBe('c-id1');
    expect(encoded).toEqual(['id1', 'id2']);
  });
});

describe('mapConnection', () => {
  it('maps the nodes of edges and nodes alike and stays lazy', async () => {
    const rows = [1, 2, 3].map((n) => ({ id: `id${n}`, inner: { n } }));
    let counted = 0;
    let encoded = 0;
    const c = mapConnection(
      connectionFromRows(rows, pageWindow({ first: 2 }, 'k'), (r) => `c-${r.id}-${++encoded}`, {
        totalCount: () => Promise.resolve(++counted),
      }),
      (r) => r.inner,
    );
    expect(c.nodes).toEqual([{ n: 1 }, { n: 2 }]);
    expect(counted).toBe(0);
    expect(encoded).toBe(0);
    expect(c.edges).toEqual([
      { cursor: 'c-id1-1', node: { n: 1 } },
      { cursor: 'c-id2-2', node: { n: 2 } },
    ]);
    expect(c.edges[0].node).toBe(c.nodes[0]);
    expect(c.pageInfo).toMatchObject({ hasNextPage: true, startCursor: 'c-id1-1' });
    expect(await c.totalCount).toBe(1);
  });
});
