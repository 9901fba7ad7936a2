import { DataSource } from 'typeorm';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { gql } from './graphql-client.js';
import { ADMIN_EMAIL, ADMIN_PASSWORD, PUBLIC_URL, startApp, type TestApp } from './helpers/app.js';
import { adminClient, tokenFor } from './helpers/factories.js';
import type { Client } from './helpers/http.js';
import { seedLists, type Seeded } from './helpers/seed.js';

const ROWS = Number(process.env.PLAN_TEST_ROWS ?? 20_000);
const TABLES = ['users', 'posts', 'orders', 'rooms', 'messages', 'list_counts'];
/** An equality filter on one of these columns must be answered by an index search, not a walk. */
const FILTER = /\b(role|author_id|user_id|room_id|status|scope)\s*(=|IN\b)/i;

interface Statement {
  sql: string;
  params: unknown[];
}

/** Why a plan is refused (empty: fine). SQLite: EXPLAIN QUERY PLAN rows. */
function sqliteProblems(sql: string, plan: { detail: string }[]): string[] {
  const problems: string[] = [];
  for (const { detail } of plan) {
    const scan = /^SCAN (\w+)(.*)$/.exec(detail);
    if (scan && TABLES.includes(scan[1])) {
      if (!/USING (COVERING )?INDEX|USING INTEGER PRIMARY KEY/.test(scan[2])) {
        problems.push(`full scan: ${detail}`);
      } else if (FILTER.test(sql)) {
        problems.push(`index walked instead of searched for the filter: ${detail}`);
      }
    }
    if (/USE TEMP B-TREE/.test(detail)) {
      problems.push(`sort: ${detail}`);
    }
  }
  return problems;
}

interface PgNode {
  'Node Type': string;
  'Relation Name'?: string;
  'Plan Rows'?: number;
  Plans?: PgNode[];
}

/** PostgreSQL: EXPLAIN (FORMAT JSON). Seq scans of list tables and sorts of their rows are refused. */
function pgProblems(node: PgNode, problems: string[] = []): string[] {
  if (node['Node Type'] === 'Seq Scan' && TABLES.includes(node['Relation Name'] ?? '')) {
    problems.push(`seq scan on ${node['Relation Name']}`);
  }
  if (/Sort/.test(node['Node Type']) && (node['Plan Rows'] ?? 0) > 200) {
    problems.push(`${node['Node Type']} of ~${node['Plan Rows']} rows`);
  }
  for (const child of node.Plans ?? []) {
    pgProblems(child, problems);
  }
  return problems;
}

/**
 * Every statement a list request runs (REST and GraphQL, page 1 and cursor pages, each documented
 * sort in both directions and each filter) is EXPLAINed at realistic size (ROWS rows per table,
 * ANALYZEd): no full scan, no sort of the table's rows, filters answered by an index search.
 */
describe(`list query plans at ${ROWS} rows`, () => {
  let t: TestApp;
  let ds: DataSource;
  let admin: Client;
  let bearer: string;
  let seeded: Seeded;
  const captured: Statement[] = [];
  /** Every SELECT, counts included (`captured` holds the list statements the first test checks). */
  const selects: Statement[] = [];

  beforeAll(async () => {
    t = await startApp();
    ds = t.app.get(DataSource);
    admin = await adminClient(t.url);
    bearer = await tokenFor(t.url, ADMIN_EMAIL, ADMIN_PASSWORD);
    seeded = await seedLists(t, ROWS);
    const logger = ds.logger;
    const original = logger.logQuery.bind(logger);
    logger.logQuery = (query, parameters, runner) => {
      if (/^\s*SELECT/i.test(query)) {
        const statement = {
          sql: query,
          params: Array.isArray(parameters) ? [...(parameters as unknown[])] : [],
        };
        selects.push(statement);
        if (/ORDER BY|list_counts/i.test(query)) {
          captured.push(statement);
        }
      }
      return original(query, parameters, runner);
    };
  }, 120_000);
  afterAll(async () => {
    await t.close();
  });

  /** GET `path` and the page its Link rel="next" points to. */
  async function pageAndNext(path: string) {
    const res = await admin.get(path);
    expect(res.status, `${path}: ${JSON.stringify(res.body)}`).toBe(200);
    const next = /<([^>]+)>; rel="next"/.exec(res.headers.get('link') ?? '')?.[1];
    expect(next, path).toBeDefined();
    expect((await admin.get(next!.slice(PUBLIC_URL.length))).status).toBe(200);
  }

  async function graphql(query: string) {
    const res = await gql(t.url, query, { auth: { bearer } });
    expect(res.body.errors, query).toBeUndefined();
    return res.body.data;
  }

  async function explain(s: Statement): Promise<string[]> {
    if (ds.options.type === 'postgres') {
      const rows = await ds.query<{ 'QUERY PLAN': [{ Plan: PgNode }] }[]>(
        `EXPLAIN (FORMAT JSON) ${s.sql}`,
        s.params,
      );
      return pgProblems(rows[0]['QUERY PLAN'][0].Plan);
    }
    const plan = await ds.query<{ detail: string }[]>(`EXPLAIN QUERY PLAN ${s.sql}`, s.params);
    return sqliteProblems(s.sql, plan);
  }

  it('every list statement is an index range (no full scan, no sort)', async () => {
    const sorts = (fields: string[]) => fields.flatMap((f) => [f, `-${f}`]);
    for (const sort of sorts(['created_at', 'updated_at', 'name'])) {
      await pageAndNext(`/api/v1/users?sort=${sort}`);
      await pageAndNext(`/api/v1/users?sort=${sort}&role=GUEST`);
    }
    for (const sort of sorts(['created_at', 'updated_at', 'title'])) {
      await pageAndNext(`/api/v1/posts?sort=${sort}`);
      await pageAndNext(`/api/v1/posts?sort=${sort}&author_id=${seeded.busyUser}`);
    }
    for (const sort of sorts(['created_at'])) {
      await pageAndNext(`/api/v1/users/${seeded.busyUser}/orders?sort=${sort}`);
      await pageAndNext(`/api/v1/users/${seeded.busyUser}/orders?sort=${sort}&status=paid`);
      await pageAndNext(`/api/v1/rooms/${seeded.busyRoom}/messages?sort=${sort}`);
    }
    for (const sort of sorts(['created_at', 'name'])) {
      await pageAndNext(`/api/v1/rooms?sort=${sort}`);
    }
    // the orders list across users (docs/admin.md): each sort, alone and after each equality filter
    for (const sort of sorts(['created_at', 'total_cents'])) {
      await pageAndNext(`/api/v1/orders?sort=${sort}`);
      await pageAndNext(`/api/v1/orders?sort=${sort}&status=paid`);
      await pageAndNext(`/api/v1/orders?sort=${sort}&user_id=${seeded.busyUser}`);
      await pageAndNext(`/api/v1/orders?sort=${sort}&user_id=${seeded.busyUser}&status=paid`);
    }
    const audit = await admin.get('/api/v1/audit-events?limit=1');
    expect(audit.status).toBe(200);
    await pageAndNext(`/api/v1/users?page=400&limit=25`);

    for (const field of ['CREATED_AT', 'UPDATED_AT', 'NAME']) {
      for (const direction of ['ASC', 'DESC']) {
        for (const role of ['', 'role: GUEST,']) {
          const data = await graphql(
            `{ users(${role} first: 20, orderBy: { field: ${field}, direction: ${direction} }) {
                 totalCount pageInfo { endCursor } } }`,
          );
          await graphql(
            `{ users(${role} first: 20, after: "${data.users.pageInfo.endCursor}",
                 orderBy: { field: ${field}, direction: ${direction} }) {
                 totalCount pageInfo { hasPreviousPage hasNextPage } nodes { id } } }`,
          );
          await graphql(
            `{ users(${role} last: 20, before: "${data.users.pageInfo.endCursor}",
                 orderBy: { field: ${field}, direction: ${direction} }) {
                 pageInfo { hasPreviousPage hasNextPage } nodes { id } } }`,
          );
        }
      }
    }
    const users = await graphql(`
      {
        users(first: 20) {
          nodes {
            id
            posts(first: 5) {
              totalCount
              pageInfo {
                endCursor
              }
              nodes {
                id
              }
            }
            orders(first: 5) {
              totalCount
              nodes {
                id
              }
            }
            paid: orders(first: 5, status: PAID) {
              totalCount
              nodes {
                id
              }
            }
          }
        }
      }
    `);
    const postCursor = users.users.nodes[0].posts.pageInfo.endCursor as string;
    await graphql(`{ users(first: 20) { nodes { id
        posts(first: 5, after: "${postCursor}") { pageInfo { hasPreviousPage } nodes { id } } } } }`);
    const rooms = await graphql(`
      {
        rooms(first: 20) {
          totalCount
          pageInfo {
            endCursor
          }
          nodes {
            messages(first: 5) {
              totalCount
              nodes {
                id
              }
            }
          }
        }
      }
    `);
    await graphql(
      `{ rooms(first: 20, after: "${rooms.rooms.pageInfo.endCursor}") { nodes { id } } }`,
    );
    const posts = await graphql('{ posts(first: 20) { id } }');
    await graphql(`{ posts(first: 20, after: "${posts.posts[19].id}") { id } }`);

    expect(captured.length).toBeGreaterThan(100);
    const refused: string[] = [];
    const seen = new Set<string>();
    for (const s of captured) {
      if (seen.has(s.sql)) {
        continue;
      }
      seen.add(s.sql);
      const problems = await explain(s);
      if (problems.length > 0) {
        refused.push(`${s.sql.replace(/\s+/g, ' ')}\n    -> ${problems.join('; ')}`);
      }
    }
    expect(refused, refused.join('\n')).toEqual([]);
  }, 240_000);

  it('a user search reads its matches through the name and e-mail indexes, never walking users (SQLite)', async () => {
    if (ds.options.type === 'postgres') {
      return; // PostgreSQL: bitmap scans of the GIN and e-mail indexes (search.e2e-spec.ts EXPLAINs them)
    }
    const from = captured.length;
    const res = await admin.get('/api/v1/users?q=zq7rare');
    expect(res.status, res.text).toBe(200);
    // a search sorts its matches by design: its statements leave the list the other test checks
    const statements = captured.splice(from).filter((s) => /users_fts/.test(s.sql));
    expect(statements.length).toBeGreaterThan(0);
    for (const s of statements) {
      const plan = await ds.query<{ detail: string }[]>(`EXPLAIN QUERY PLAN ${s.sql}`, s.params);
      const details = plan.map((row) => row.detail);
      // the matches drive the query (a lookup by id per match) and are then sorted; walking the
      // created_at index or scanning users would cost the table's size for a rare term
      expect(
        details.filter((d) => /^SCAN users\b/.test(d)),
        details.join('\n'),
      ).toEqual([]);
      expect(
        details.some((d) =>
          /^SEARCH users USING (INTEGER PRIMARY KEY|INDEX \S+ \(id=\?\))/.test(d),
        ),
        details.join('\n'),
      ).toBe(true);
    }
  });

  const sqliteDetails = async (s: Statement) =>
    (await ds.query<{ detail: string }[]>(`EXPLAIN QUERY PLAN ${s.sql}`, s.params)).map(
      (row) => row.detail,
    );

  /** A COUNT reads one range of `index`, covering (no table row per match), never all orders. */
  async function expectCountPlan(count: Statement, index: string, range: string, query: string) {
    if (ds.options.type === 'postgres') {
      // an Index Only Scan once the visibility map is set, as autovacuum does; right after a bulk
      // load a bitmap scan reading each match
      const [plan] = (
        await ds.query<{ 'QUERY PLAN': [{ Plan: PgNode }] }[]>(
          `EXPLAIN (FORMAT JSON) ${count.sql}`,
          count.params,
        )
      )[0]['QUERY PLAN'];
      expect(JSON.stringify(plan), query).toMatch(
        new RegExp(
          `"Node Type":"(Index Only |Bitmap Index |Index )Scan"[^}]*"Index Name":"${index}"`,
        ),
      );
      // (the owner check may read the deleted users in one pass, a hash anti-join, when that is
      // cheaper than one look-up per match: at 20 000 users it is)
      expect(
        pgProblems(plan.Plan).filter((p) => !/on users$/.test(p)),
        query,
      ).toEqual([]);
      return;
    }
    // not a skip-scan (ANY(…)) of another index, one seek per user or status
    const plan = await sqliteDetails(count);
    expect(plan.join('\n'), query).toContain(
      `SEARCH orders USING COVERING INDEX ${index} (${range})`,
    );
    expect(plan.filter((d) => /ANY\(/.test(d)).join('\n'), query).toBe('');
  }

  it('a total or date filter of the orders list reads its index range; its total reads counters, or counts one index range covering', async () => {
    // seeded totals are spread over 100..100 099 cents and created_at over one second per order:
    // each filter below matches about 0.5 % of the orders (100 of 20 000)
    const after = new Date(
      Date.parse('2020-01-01T00:00:00Z') + (ROWS - ROWS / 200) * 1000 + 30_500,
    ).toISOString();
    // `count`: the COUNT the total needs, or none (the range counters alone)
    const filters = [
      { query: 'min_total_cents=99600', range: 'total_cents>?' },
      { query: 'max_total_cents=599', range: 'total_cents<?' },
      {
        // the total: counters of the minutes before, and a COUNT of the bound's own minute
        query: `created_after=${after}`,
        range: 'created_at>?',
        count: { index: 'ix_orders_created', range: 'created_at>? AND created_at<?' },
      },
      {
        // one user's orders: a COUNT of that user's range (no range counters per user)
        query: `user_id=${seeded.busyUser}&min_total_cents=99600`,
        count: { index: 'ix_orders_user_total', range: 'user_id=? AND total_cents>?' },
      },
    ];
    // its statements are not the list statements the first test checks (a total filter's page sorts
    // its ~0.5 % of the orders by design): taken out of `captured`, whichever test runs first
    const capturedFrom = captured.length;
    onTestFinished(() => void captured.splice(capturedFrom));
    for (const filter of filters) {
      const { query } = filter;
      const from = selects.length;
      const res = await admin.get(`/api/v1/orders?${query}&limit=20`);
      expect(res.status, res.text).toBe(200);
      expect(res.body.data.length, query).toBe(20);
      const statements = selects.slice(from).filter((s) => /\bFROM orders\b/.test(s.sql));
      const count = statements.find((s) => /COUNT\(\*\)/i.test(s.sql));
      const page = statements.find((s) => /ORDER BY/i.test(s.sql));
      const counters = selects.slice(from).filter((s) => /\bFROM list_counts\b/.test(s.sql));
      if (!filter.count) {
        expect(count, query).toBeUndefined();
        expect(counters.length, query).toBe(1);
        expect(counters[0].params.length, query).toBeLessThanOrEqual(219);
      } else {
        expect(count, query).toBeDefined();
        await expectCountPlan(count!, filter.count.index, filter.count.range, query);
      }
      // the page: a range of the filter's column (`range`)
      if (!filter.range) {
        continue;
      }
      const { range } = filter;
      expect(page, query).toBeDefined();
      if (ds.options.type === 'postgres') {
        // the page: the filter's range, or a walk of the order's index that stops at a page
        const [pagePlan] = (
          await ds.query<{ 'QUERY PLAN': [{ Plan: PgNode }] }[]>(
            `EXPLAIN (FORMAT JSON) ${page!.sql}`,
            page!.params,
          )
        )[0]['QUERY PLAN'];
        expect(pgProblems(pagePlan.Plan), query).toEqual([]);
        continue;
      }
      // the page: a range of the filter's column, its ~0.5 % of matches sorted (never a walk of all
      // orders, never one seek per user); SQLite may take the range per status of the
      // (status, total_cents, id) index instead (5 seeks, the same rows)
      const pagePlan = await sqliteDetails(page!);
      const ranges = new RegExp(
        `^SEARCH orders USING INDEX \\S+ \\((ANY\\(status\\) AND )?${range.replace(/[()?]/g, '\\$&')}\\)`,
      );
      expect(
        pagePlan.some((d) => ranges.test(d)),
        pagePlan.join('\n'),
      ).toBe(true);
      expect(pagePlan.filter((d) => /^SCAN orders\b|ANY\(user_id\)/.test(d)).join('\n')).toBe('');
    }
  });

  it('the checker refuses a full scan and a sort (it can fail)', async () => {
    const problems = await explain({
      sql: 'SELECT id FROM users WHERE age = 3 ORDER BY email LIMIT 5',
      params: [],
    });
    expect(problems.length).toBeGreaterThan(0);
  });
});
