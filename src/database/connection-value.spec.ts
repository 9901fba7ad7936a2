import { describe, expect, it } from 'vitest';
import { encodeCursor, pageWindow } from './paging.js';
import { connectionFromRows, mapConnection } from './connection-value.js';

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
    const window = pageWindow({ last: 2, before: encodeCursor('k', ['x'], 'id9') }, 'k');
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
