import { describe, expect, it } from 'vitest';
import { mapPage, restPageOf, type PageValue } from './connection-value.js';
import { emptyPage, windowAsQuery } from './page-reader.js';

describe('page values', () => {
  it('an empty page maps to the REST page listPage gives: no rows, no next, total 0', async () => {
    const query = { page: 3, limit: 10, sort: [{ field: 'created_at', desc: false }], filters: {} };
    const page = emptyPage<{ id: string }>(query);
    expect(page.pageInfo).toMatchObject({ hasNextPage: false, startCursor: null, endCursor: null });
    expect(await restPageOf(page)).toEqual({
      data: [],
      meta: { page: 3, limit: 10, total: 0 },
      next: null,
    });
    // reached by cursor alone: the page has no number
    expect((await restPageOf(emptyPage({ ...query, cursor: 'c' }))).meta.page).toBeNull();
  });

  it('the REST page of a value: next is the last cursor only when there is a next page', async () => {
    const value = (hasNextPage: boolean, numbered?: boolean): PageValue<{ id: string }> => ({
      edges: [
        { cursor: 'ca', node: { id: 'a' } },
        { cursor: 'cb', node: { id: 'b' } },
      ],
      nodes: [{ id: 'a' }, { id: 'b' }],
      pageInfo: { hasNextPage, hasPreviousPage: false, startCursor: 'ca', endCursor: 'cb' },
      totalCount: Promise.resolve(7),
      page: 1,
      limit: 2,
      numbered,
    });
    expect(await restPageOf(value(true))).toEqual({
      data: [{ id: 'a' }, { id: 'b' }],
      meta: { page: 1, limit: 2, total: 7 },
      next: 'cb',
    });
    expect((await restPageOf(value(false))).next).toBeNull();
    // a list paged by page number only has no `next` at all (Link uses page numbers)
    expect(await restPageOf(value(true, true))).not.toHaveProperty('next');
    // mapped nodes keep the cursors, the number and the size
    const mapped = mapPage(value(true), (n) => n.id.toUpperCase());
    expect(mapped.edges).toEqual([
      { cursor: 'ca', node: 'A' },
      { cursor: 'cb', node: 'B' },
    ]);
    expect(mapped).toMatchObject({ page: 1, limit: 2 });
  });

  it('a forward window reads as the REST query of its list (same cursors)', () => {
    expect(windowAsQuery({ first: 5, after: 'c' }, { field: 'at', desc: true })).toEqual({
      page: 1,
      limit: 5,
      sort: [{ field: 'at', desc: true }],
      filters: {},
      cursor: 'c',
    });
    expect(windowAsQuery({}, { field: 'at', desc: true })).toMatchObject({
      limit: 20,
      cursor: undefined,
    });
  });
});
