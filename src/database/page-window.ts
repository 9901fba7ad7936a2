/**
 * A keyset page of a GraphQL connection as the repositories see it: validated by `pageWindow`
 * (src/graphql/connection.ts, from `first`/`after`/`last`/`before`), read with `keysetSql`. Here,
 * below both, so that a repository or a service never imports the GraphQL layer.
 */

/** Validated paging: how many rows, which way, between which keyset positions. */
export interface PageWindow {
  size: number;
  backward: boolean;
  after?: [unknown, string];
  before?: [unknown, string];
}

/**
 * SQL pieces of a keyset page over `(column, id)` ordered `desc` or not. `p(n)` is the dialect's
 * placeholder; `params` receives the bound values. Fetch `limit` rows (one more than the page size)
 * with `ORDER BY orderBy` and hand them to `connectionFromRows` (src/graphql/connection.ts).
 */
export function keysetSql(
  window: PageWindow,
  column: string,
  desc: boolean,
  p: (n: number) => string,
  params: unknown[],
  alias = '',
): { where: string[]; orderBy: string; limit: number } {
  const col = alias ? `${alias}.${column}` : column;
  const id = alias ? `${alias}.id` : 'id';
  const where: string[] = [];
  const bound = (pos: [unknown, string], op: '>' | '<') => {
    params.push(pos[0], pos[1]);
    where.push(`(${col}, ${id}) ${op} (${p(params.length - 1)}, ${p(params.length)})`);
  };
  if (window.after) {
    bound(window.after, desc ? '<' : '>');
  }
  if (window.before) {
    bound(window.before, desc ? '>' : '<');
  }
  const scanDesc = desc !== window.backward;
  const dir = scanDesc ? 'DESC' : 'ASC';
  return { where, orderBy: `${col} ${dir}, ${id} ${dir}`, limit: window.size + 1 };
}
