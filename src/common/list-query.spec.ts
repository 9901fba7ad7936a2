import { describe, expect, it } from 'vitest';
import { DomainError } from './errors.js';
import { linkHeader, parseListQuery, type ListSpec } from './list-query.js';

const spec: ListSpec<'role'> = {
  sortFields: ['created_at', 'name'],
  defaultSort: [{ field: 'created_at', desc: false }],
  filters: { role: ['ADMIN', 'USER'] },
};

describe('parseListQuery', () => {
  it('defaults to page 1, limit 20 and the default sort', () => {
    expect(parseListQuery({}, spec)).toEqual({
      page: 1,
      limit: 20,
      sort: spec.defaultSort,
      filters: {},
      pageGiven: false,
    });
  });

  it('parses sort terms with - for descending', () => {
    expect(parseListQuery({ sort: '-name,created_at' }, spec).sort).toEqual([
      { field: 'name', desc: true },
      { field: 'created_at', desc: false },
    ]);
  });

  it('collects every bad parameter into details', () => {
    try {
      parseListQuery({ page: '0', limit: '101', sort: 'email', role: 'GOD' }, spec);
      expect.unreachable();
    } catch (err) {
      expect(err).toBeInstanceOf(DomainError);
      expect((err as DomainError).code).toBe('bad_request');
      expect((err as DomainError).details?.map((d) => d.field)).toEqual([
        'page',
        'limit',
        'sort',
        'role',
      ]);
    }
  });

  it('rejects repeated parameters (arrays) and duplicate sort fields', () => {
    expect(() => parseListQuery({ limit: ['1', '2'] }, spec)).toThrow(DomainError);
    expect(() => parseListQuery({ sort: 'name,-name' }, spec)).toThrow(DomainError);
  });
});

describe('linkHeader', () => {
  it('builds first/prev/next/last and drops api_key', () => {
    const link = linkHeader(
      'https://x.test',
      '/api/v1/users?page=2&limit=10&api_key=secret&role=USER',
      {
        page: 2,
        limit: 10,
        total: 35,
      },
    );
    expect(link).toBe(
      [
        '<https://x.test/api/v1/users?page=1&limit=10&role=USER>; rel="first"',
        '<https://x.test/api/v1/users?page=1&limit=10&role=USER>; rel="prev"',
        '<https://x.test/api/v1/users?page=3&limit=10&role=USER>; rel="next"',
        '<https://x.test/api/v1/users?page=4&limit=10&role=USER>; rel="last"',
      ].join(', '),
    );
  });
});
