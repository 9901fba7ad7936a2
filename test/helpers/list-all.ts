import { expect } from 'vitest';
import type { Client, TestResponse } from './http.js';

/**
 * Every row of a list, following its `Link: rel="next"` URLs from `path` (with its query); and the
 * `meta.total` of the first page. Tests of exact totals compare the two.
 */
export async function listAll(
  client: Client,
  path: string,
): Promise<{ total: number; rows: number }> {
  let url: string | undefined = path;
  let total = -1;
  let rows = 0;
  while (url) {
    const res: TestResponse = await client.get(url);
    expect(res.status, `${path}: ${res.text}`).toBe(200);
    if (total < 0) {
      total = res.body.meta.total as number;
    }
    rows += (res.body.data as unknown[]).length;
    url = /<([^>]+)>; rel="next"/
      .exec(res.headers.get('link') ?? '')?.[1]
      ?.replace(/^http:\/\/atrium\.test/, '');
  }
  return { total, rows };
}
