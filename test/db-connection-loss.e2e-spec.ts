import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freshDatabaseUrl, startApp, usingPostgres, type TestApp } from './helpers/app.js';
import { createUser, type CreatedUser } from './helpers/factories.js';
import { gql } from './graphql-client.js';
import type { TestResponse } from './helpers/http.js';

/**
 * PostgreSQL connections terminated under the app (pg_terminate_backend on its own backends, found by
 * their application_name): the requests that were using them get 503 with Retry-After, never 500,
 * and the pool replaces the connections without a restart.
 */
describe.skipIf(!usingPostgres)(
  usingPostgres
    ? 'terminated PostgreSQL connections'
    : 'terminated PostgreSQL connections: skipped, SQLite has no server connection to lose (set DATABASE_URL=postgres://…)',
  () => {
    let t: TestApp;
    let user: CreatedUser;
    let admin: pg.Client;
    let schema: string;

    beforeAll(async () => {
      const url = freshDatabaseUrl();
      schema = new URL(url).searchParams.get('schema')!;
      t = await startApp({ DATABASE_URL: url });
      user = await createUser(t.url);
      admin = new pg.Client({ connectionString: process.env.DATABASE_URL });
      await admin.connect();
    });
    afterAll(async () => {
      await admin?.end();
      await t?.close();
    });

    /** Terminates every backend of this app; returns how many. */
    async function killBackends(): Promise<number> {
      const { rows } = await admin.query<{ pid: number }>(
        `SELECT pid FROM pg_stat_activity WHERE application_name = $1 AND pid <> pg_backend_pid()`,
        [`atrium/${schema}`],
      );
      await Promise.all(rows.map((r) => admin.query('SELECT pg_terminate_backend($1)', [r.pid])));
      return rows.length;
    }

    function check(res: TestResponse, statuses: Map<number, number>) {
      statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
      if (res.status === 503) {
        expect(res.headers.get('retry-after')).toBe('1');
        expect(res.body.error.code).toBe('service_unavailable');
      }
    }

    it('answers 503 with Retry-After (never 500) while its connections are killed, and recovers', async () => {
      const statuses = new Map<number, number>();
      let killed = 0;
      let running = true;
      const load = (async () => {
        let i = 0;
        while (running) {
          const batch = await Promise.all(
            Array.from({ length: 10 }, (_, j) =>
              (i + j) % 3 === 0
                ? user.client.post('/api/v1/posts', { title: `t${i + j}`, body: 'b' })
                : user.client.get('/api/v1/users?limit=5'),
            ),
          );
          for (const res of batch) {
            check(res, statuses);
          }
          i += 10;
        }
      })();
      for (let round = 0; round < 3; round++) {
        await new Promise((r) => setTimeout(r, 150)); // let the load take connections again
        killed += await killBackends();
      }
      await new Promise((r) => setTimeout(r, 150));
      running = false;
      await load;

      expect(killed).toBeGreaterThan(0);
      const unexpected = [...statuses.keys()].filter((s) => ![200, 201, 503].includes(s));
      expect(unexpected, JSON.stringify([...statuses])).toEqual([]);

      // the pool has replaced the killed connections: no restart, every request succeeds again
      for (let i = 0; i < 20; i++) {
        expect((await user.client.get('/api/v1/users?limit=5')).status).toBe(200);
      }
      const res = await gql(t.url, '{ me { id } }', { auth: { bearer: user.token } });
      expect(res.body.data?.me?.id).toBe(user.id);
      expect((await fetch(`${t.url}/health/ready`)).status).toBe(200);
    });

    it('answers 503 to a request whose statement runs while its backend is terminated', async () => {
      // 30 requests in flight over a pool of 10: kill every backend while they hold them
      const statuses = new Map<number, number>();
      const inFlight = Array.from({ length: 30 }, () => user.client.get('/api/v1/users?limit=100'));
      await killBackends();
      for (const res of await Promise.all(inFlight)) {
        check(res, statuses);
      }
      const unexpected = [...statuses.keys()].filter((s) => ![200, 503].includes(s));
      expect(unexpected, JSON.stringify([...statuses])).toEqual([]);
      expect((await user.client.get('/api/v1/users?limit=5')).status).toBe(200);
    });
  },
);
