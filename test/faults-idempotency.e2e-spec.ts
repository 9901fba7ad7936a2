import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DatabaseService } from '../src/database/database.service.js';
import {
  ADMIN_EMAIL,
  ADMIN_PASSWORD,
  freshDatabaseUrl,
  PUBLIC_URL,
  startApp,
  usingPostgres,
  type TestApp,
} from './helpers/app.js';
import { ROOT, serviceBuild } from './helpers/build.js';
import { adminClient, createUser, unique, type CreatedUser } from './helpers/factories.js';
import { FaultProxy } from './helpers/fault-proxy.js';
import { client, request, type Client, type TestResponse } from './helpers/http.js';
import { freePort } from './helpers/rate-limit.js';
import { scaled } from './helpers/time.js';
import { waitFor } from './helpers/wait.js';

/**
 * The Idempotency-Key promise under faults (docs/idempotency.md, "Faults"): a keyed POST's change and
 * its stored answer commit in one transaction, so after a commit the key always replays and before
 * it nothing happened. Faults are real: the answer's write refused by the database, a PostgreSQL
 * connection cut by a TCP proxy (test/helpers/fault-proxy.ts) while that write runs, connections cut
 * every few hundred milliseconds under load, and the instance running the request killed with
 * SIGKILL. The retries go to another instance of the same database.
 */

/** SQL on the app's own database, from outside the app (PostgreSQL: its schema). */
interface Sql {
  run(statement: string): Promise<void>;
  count(statement: string, params: unknown[]): Promise<number>;
  close(): Promise<void>;
}

async function sqlFor(t: TestApp, databaseUrl: string): Promise<Sql> {
  if (!usingPostgres) {
    const db = t.app.get(DatabaseService);
    return {
      run: async (statement) => {
        await db.query(statement);
      },
      count: async (statement, params) =>
        Number(Object.values((await db.query<Record<string, unknown>>(statement, params))[0])[0]),
      close: async () => undefined,
    };
  }
  const schema = new URL(databaseUrl).searchParams.get('schema')!;
  const c = new pg.Client({ connectionString: process.env.DATABASE_URL });
  await c.connect();
  await c.query(`SET search_path TO "${schema}"`);
  return {
    run: async (statement) => {
      await c.query(statement);
    },
    count: async (statement, params) =>
      Number(Object.values((await c.query(statement, params)).rows[0] as object)[0]),
    close: () => c.end(),
  };
}

/** `$n` on PostgreSQL, `?` on SQLite. */
const p = (n: number) => (usingPostgres ? `$${n}` : '?');

/** Makes the database refuse to store any Idempotency-Key answer (a record with a status). */
async function refuseAnswers(sql: Sql): Promise<void> {
  if (usingPostgres) {
    await sql.run(`CREATE OR REPLACE FUNCTION fault_refuse_answer() RETURNS trigger AS $$
      BEGIN IF NEW.status IS NOT NULL THEN RAISE EXCEPTION 'injected fault'; END IF; RETURN NEW; END
      $$ LANGUAGE plpgsql`);
    await sql.run(`CREATE TRIGGER fault_refuse_answer BEFORE INSERT OR UPDATE ON idempotency_keys
      FOR EACH ROW EXECUTE FUNCTION fault_refuse_answer()`);
    return;
  }
  for (const op of ['INSERT', 'UPDATE']) {
    await sql.run(`CREATE TRIGGER fault_refuse_answer_${op} BEFORE ${op} ON idempotency_keys
      WHEN NEW.status IS NOT NULL BEGIN SELECT RAISE(ABORT, 'injected fault'); END`);
  }
}

async function acceptAnswers(sql: Sql): Promise<void> {
  if (usingPostgres) {
    await sql.run(`DROP TRIGGER IF EXISTS fault_refuse_answer ON idempotency_keys`);
    return;
  }
  for (const op of ['INSERT', 'UPDATE']) {
    await sql.run(`DROP TRIGGER IF EXISTS fault_refuse_answer_${op}`);
  }
}

/**
 * PostgreSQL: the next Idempotency-Key answer written sleeps `seconds` first, so a test can cut its
 * connection or kill its instance while it is being written (later answers do not sleep).
 */
async function slowNextAnswer(sql: Sql, seconds: number): Promise<void> {
  await sql.run(`DROP SEQUENCE IF EXISTS fault_slow_answer_seq`);
  await sql.run(`CREATE SEQUENCE fault_slow_answer_seq`);
  await sql.run(`CREATE OR REPLACE FUNCTION fault_slow_answer() RETURNS trigger AS $$
    BEGIN
      IF NEW.status IS NOT NULL AND nextval('fault_slow_answer_seq') = 1 THEN
        PERFORM pg_sleep(${seconds});
      END IF;
      RETURN NEW;
    END $$ LANGUAGE plpgsql`);
  await sql.run(`DROP TRIGGER IF EXISTS fault_slow_answer ON idempotency_keys`);
  await sql.run(`CREATE TRIGGER fault_slow_answer BEFORE INSERT OR UPDATE ON idempotency_keys
    FOR EACH ROW EXECUTE FUNCTION fault_slow_answer()`);
}

/** PostgreSQL: resolves once a backend of this schema's app sleeps in that trigger. */
async function answerWriteSleeping(admin: pg.Client, schema: string): Promise<void> {
  await waitFor(
    async () => {
      const { rows } = await admin.query<{ n: string }>(
        `SELECT COUNT(*) AS n FROM pg_stat_activity
          WHERE application_name = $1 AND wait_event = 'PgSleep'`,
        [`atrium/${schema}`],
      );
      return Number(rows[0].n) > 0;
    },
    { timeoutMs: 15_000, what: 'an answer write to start sleeping' },
  );
}

/**
 * Sends a keyed POST until it gets an answer that is not "retry" (5xx, 409 in progress, or a
 * connection error), as a client that lost its answer does; returns that answer and how many tries.
 */
async function retryUntilAnswered(
  send: () => Promise<TestResponse>,
  deadlineMs = scaled(20_000),
): Promise<{ res: TestResponse; tries: number }> {
  const deadline = Date.now() + deadlineMs;
  let tries = 0;
  for (;;) {
    tries += 1;
    let res: TestResponse | undefined;
    try {
      res = await send();
    } catch {
      res = undefined; // the connection failed: retry
    }
    const retry =
      !res ||
      res.status >= 500 ||
      (res.status === 409 && res.body?.error?.code === 'idempotency_key_in_progress');
    if (!retry) {
      return { res: res!, tries };
    }
    if (Date.now() > deadline) {
      throw new Error(`still ${res?.status ?? 'no answer'} after ${tries} tries`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Keys of the churn test (FAULT_KEYS to run more). */
const KEYS = Number(process.env.FAULT_KEYS ?? 60);

const orderBody = (sku: string) => ({
  items: [{ sku, quantity: 1, unit_price_cents: 100 }],
  currency: 'EUR',
});

describe('Idempotency-Key: the answer is stored in the transaction of the change', () => {
  let t: TestApp;
  let sql: Sql;
  let admin: Client;
  let user: CreatedUser;
  let roomId: string;

  beforeAll(async () => {
    const url = freshDatabaseUrl();
    t = await startApp({ DATABASE_URL: url, WEBHOOK_ALLOWED_HOSTS: '127.0.0.1' });
    sql = await sqlFor(t, url);
    admin = await adminClient(t.url);
    user = await createUser(t.url);
    const room = await admin.post('/api/v1/rooms', { name: unique('room-') });
    roomId = room.body.data.id as string;
  });
  afterAll(async () => {
    await acceptAnswers(sql).catch(() => undefined);
    await sql?.close();
    await t?.close();
  });

  /** Every keyed POST, with what it creates and how to count it. */
  function routes() {
    const email = `${unique()}@example.com`;
    const title = unique('post-');
    const room = unique('room-');
    const content = unique('msg-');
    const batchEmail = `${unique()}@example.com`;
    const hook = `http://127.0.0.1:9/${unique()}`;
    const sku = unique('sku-');
    return [
      {
        name: 'POST /users',
        send: (h: Record<string, string>) =>
          admin.post('/api/v1/users', { name: 'Fault', email }, { headers: h }),
        count: () => sql.count(`SELECT COUNT(*) FROM users WHERE email = ${p(1)}`, [email]),
      },
      {
        name: 'POST /users/batch',
        send: (h: Record<string, string>) =>
          admin.post(
            '/api/v1/users/batch',
            { operations: [{ op: 'create', data: { name: 'Batch', email: batchEmail } }] },
            { headers: h },
          ),
        count: () => sql.count(`SELECT COUNT(*) FROM users WHERE email = ${p(1)}`, [batchEmail]),
      },
      {
        name: 'POST /auth/register',
        send: (h: Record<string, string>) =>
          request(t.url, '/api/v1/auth/register', {
            method: 'POST',
            body: { name: 'Reg', email: `r-${email}`, password: 'a-long-password-1' },
            headers: h,
          }),
        count: () => sql.count(`SELECT COUNT(*) FROM users WHERE email = ${p(1)}`, [`r-${email}`]),
      },
      {
        name: 'POST /users/{id}/orders',
        send: (h: Record<string, string>) =>
          user.client.post(`/api/v1/users/${user.id}/orders`, orderBody(sku), { headers: h }),
        count: () =>
          sql.count(`SELECT COUNT(*) FROM orders WHERE items LIKE ${p(1)}`, [`%${sku}%`]),
      },
      {
        name: 'POST /posts',
        send: (h: Record<string, string>) =>
          user.client.post('/api/v1/posts', { title, body: 'b' }, { headers: h }),
        count: () => sql.count(`SELECT COUNT(*) FROM posts WHERE title = ${p(1)}`, [title]),
      },
      {
        name: 'POST /rooms',
        send: (h: Record<string, string>) =>
          admin.post('/api/v1/rooms', { name: room }, { headers: h }),
        count: () => sql.count(`SELECT COUNT(*) FROM rooms WHERE name = ${p(1)}`, [room]),
      },
      {
        name: 'POST /rooms/{id}/messages',
        send: (h: Record<string, string>) =>
          user.client.post(`/api/v1/rooms/${roomId}/messages`, { content }, { headers: h }),
        count: () => sql.count(`SELECT COUNT(*) FROM messages WHERE content = ${p(1)}`, [content]),
      },
      {
        name: 'POST /webhooks',
        send: (h: Record<string, string>) =>
          admin.post('/api/v1/webhooks', { url: hook, events: ['user.created'] }, { headers: h }),
        count: () =>
          sql.count(`SELECT COUNT(*) FROM webhook_endpoints WHERE url = ${p(1)}`, [hook]),
      },
    ];
  }

  it('on every keyed route: when the answer cannot be stored, the change rolls back (503, nothing created); the retry creates exactly one and replays it after', async () => {
    const all = routes();
    const keys = all.map(() => `fault-${randomBytes(8).toString('hex')}`);
    await refuseAnswers(sql);
    try {
      for (const [i, route] of all.entries()) {
        const res = await route.send({ 'Idempotency-Key': keys[i] });
        expect(res.status, `${route.name}: ${res.text}`).toBe(503);
        expect(res.body.error.code).toBe('service_unavailable');
        expect(res.headers.get('retry-after')).toBe('1');
        expect(await route.count(), `${route.name} created something`).toBe(0);
      }
    } finally {
      await acceptAnswers(sql);
    }
    for (const [i, route] of all.entries()) {
      const first = await route.send({ 'Idempotency-Key': keys[i] });
      expect([200, 201], `${route.name}: ${first.text}`).toContain(first.status);
      expect(first.headers.get('idempotent-replayed')).toBeNull();
      const again = await route.send({ 'Idempotency-Key': keys[i] });
      expect(again.status).toBe(first.status);
      expect(again.headers.get('idempotent-replayed')).toBe('true');
      expect(await route.count(), route.name).toBe(1);
    }
  });

  it('a replay of POST /webhooks answers the same endpoint with secret null (the secret is never stored)', async () => {
    const key = unique('hook-key-');
    const body = { url: `http://127.0.0.1:9/${unique()}`, events: ['user.created'] };
    const first = await admin.post('/api/v1/webhooks', body, {
      headers: { 'Idempotency-Key': key },
    });
    expect(first.status).toBe(201);
    expect(first.body.data.secret).toMatch(/^whsec_/);
    const again = await admin.post('/api/v1/webhooks', body, {
      headers: { 'Idempotency-Key': key },
    });
    expect(again.status).toBe(201);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.body.data.id).toBe(first.body.data.id);
    expect(again.body.data.secret).toBeNull();
    expect(
      await sql.count(`SELECT COUNT(*) FROM webhook_endpoints WHERE url = ${p(1)}`, [body.url]),
    ).toBe(1);
    const stored = await sql.count(
      `SELECT COUNT(*) FROM idempotency_keys WHERE response_body LIKE ${p(1)}`,
      [`%${first.body.data.secret as string}%`],
    );
    expect(stored).toBe(0);
  });

  it('a key left claimed by a request that died (a claim row without an answer, as earlier versions wrote) is free at once', async () => {
    const key = unique('orphan-');
    const sku = unique('sku-');
    const send = () =>
      user.client.post(`/api/v1/users/${user.id}/orders`, orderBody(sku), {
        headers: { 'Idempotency-Key': key },
      });
    // a first request commits; then its record is turned into an unanswered claim whose lock
    // runs for another minute (the shape an earlier version left when its runner died)
    const first = await send();
    expect(first.status).toBe(201);
    const later = new Date(Date.now() + 60_000).toISOString();
    await sql.run(
      `UPDATE idempotency_keys SET status = NULL, response_headers = NULL, response_body = NULL,
              locked_until = '${later}' WHERE response_body LIKE '%${sku}%'`,
    );
    const retry = await send();
    expect(retry.status, retry.text).toBe(201);
    expect(retry.headers.get('idempotent-replayed')).toBeNull();
    const replay = await send();
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect(replay.body.data.id).toBe(retry.body.data.id);
  });
});

describe.skipIf(!usingPostgres)(
  usingPostgres
    ? 'Idempotency-Key under PostgreSQL faults, two instances'
    : 'Idempotency-Key under PostgreSQL faults: skipped, SQLite has no connection to cut and one instance (set DATABASE_URL=postgres://…)',
  () => {
    let proxy: FaultProxy;
    let a: TestApp; // through the proxy
    let b: TestApp; // direct
    let sql: Sql;
    let admin: pg.Client;
    let schema: string;
    let url: string;
    let user: CreatedUser;
    let mainJs: string;

    // the built service, for the instance that is killed (compiled once per run: slow on a busy machine)
    beforeAll(() => {
      mainJs = join(serviceBuild(), 'main.js');
    }, scaled(240_000));

    beforeAll(async () => {
      url = freshDatabaseUrl();
      schema = new URL(url).searchParams.get('schema')!;
      const target = new URL(process.env.DATABASE_URL!);
      proxy = await FaultProxy.start({
        host: target.hostname,
        port: Number(target.port || 5432),
      });
      const shared = { REDIS_PREFIX: `atrium-test:${randomBytes(4).toString('hex')}:` };
      b = await startApp({ DATABASE_URL: url, ...shared });
      a = await startApp({ DATABASE_URL: proxy.rewrite(url), ...shared });
      sql = await sqlFor(b, url);
      admin = new pg.Client({ connectionString: process.env.DATABASE_URL });
      await admin.connect();
      user = await createUser(b.url);
    });
    afterAll(async () => {
      await admin?.end();
      await sql?.close();
      await a?.close();
      await b?.close();
      await proxy?.close();
    });

    const ordersOfUser = () =>
      sql.count(`SELECT COUNT(*) FROM orders WHERE user_id = $1`, [user.id]);

    it("the connection of the answer's write is cut: 503 and nothing created; the retry on the other instance creates exactly one", async () => {
      const before = await ordersOfUser();
      await slowNextAnswer(sql, 1);
      const key = unique('cut-');
      const sku = unique('sku-');
      const onA = client(a.url, { bearer: user.token });
      const pending = onA.post(`/api/v1/users/${user.id}/orders`, orderBody(sku), {
        headers: { 'Idempotency-Key': key },
      });
      await answerWriteSleeping(admin, schema);
      expect(proxy.drop()).toBeGreaterThan(0);
      const cut = await pending;
      expect(cut.status, cut.text).toBe(503);
      expect(await ordersOfUser()).toBe(before);
      const { res } = await retryUntilAnswered(() =>
        user.client.post(`/api/v1/users/${user.id}/orders`, orderBody(sku), {
          headers: { 'Idempotency-Key': key },
        }),
      );
      expect(res.status, res.text).toBe(201);
      expect(await ordersOfUser()).toBe(before + 1);
      const replay = await onA.post(`/api/v1/users/${user.id}/orders`, orderBody(sku), {
        headers: { 'Idempotency-Key': key },
      });
      expect(replay.headers.get('idempotent-replayed')).toBe('true');
      expect(replay.body.data.id).toBe(res.body.data.id);
    });

    /** The run must have cut the instance's connections more often than this to count. */
    const MIN_CUTS = 5;
    it(
      `under connection cuts every 100-300 ms: every key (${KEYS}, more until the cuts hit ${MIN_CUTS + 1} times), sent and retried on either instance, creates exactly one order`,
      async () => {
        const before = await ordersOfUser();
        const keys = Array.from({ length: KEYS }, (_, i) => ({ key: `churn-${i}-${unique()}` }));
        let cuts = 0;
        let running = true;
        const cutter = (async () => {
          while (running) {
            await new Promise((r) => setTimeout(r, 100 + Math.random() * 200));
            cuts += proxy.drop() > 0 ? 1 : 0;
          }
        })();
        const onA = client(a.url, { bearer: user.token });
        const answers = new Map<string, string>();
        let tries = 0;
        let queue = [...keys];
        // a fast run can send every key before the cutter has struck a few times: then more keys
        // go out until it has (or the deadline passes and the count check below fails)
        const churnDeadline = Date.now() + scaled(60_000);
        const enoughCuts = () => cuts > MIN_CUTS || Date.now() > churnDeadline;
        const workers = Array.from({ length: 8 }, async (_, w) => {
          while (queue.length > 0 || !enoughCuts()) {
            if (queue.length === 0) {
              const more = { key: `churn-${keys.length}-${unique()}` };
              keys.push(more);
              queue.push(more);
            }
            const [next] = queue.splice(0, 1);
            if (!next) {
              break;
            }
            let turn = w;
            const { res, tries: n } = await retryUntilAnswered(() => {
              turn += 1;
              // most tries go through the instance whose connections are cut
              const c = turn % 4 === 0 ? user.client : onA;
              return c.post(`/api/v1/users/${user.id}/orders`, orderBody(next.key), {
                headers: { 'Idempotency-Key': next.key },
              });
            }, scaled(60_000));
            tries += n;
            if (process.env.FAULT_DEBUG) {
              console.log(`${next.key}: ${n} tries`);
            }
            expect(res.status, res.text).toBe(201);
            answers.set(next.key, res.body.data.id as string);
          }
        });
        try {
          await Promise.all(workers);
        } finally {
          running = false;
          await cutter;
          queue = [];
        }
        // every key once more on each instance: all replays of the one order each key made
        for (const { key } of keys) {
          for (const c of [onA, user.client]) {
            const res = await c.post(`/api/v1/users/${user.id}/orders`, orderBody(key), {
              headers: { 'Idempotency-Key': key },
            });
            expect(res.headers.get('idempotent-replayed'), res.text).toBe('true');
            expect(res.body.data.id).toBe(answers.get(key));
          }
        }
        const created = (await ordersOfUser()) - before;
        console.log(
          `Idempotency-Key churn: ${keys.length} keys, ${tries} tries, ${cuts} connection cuts, ` +
            `${created} orders created, ${created - keys.length} duplicates`,
        );
        expect(cuts).toBeGreaterThan(MIN_CUTS);
        expect(tries).toBeGreaterThan(keys.length); // the cuts did hit requests
        expect(created).toBe(keys.length);
      },
      scaled(120_000),
    );

    it(
      'SIGKILL of the instance writing a keyed answer: the retry on another instance runs as soon as the transaction is gone (seconds, not the old 60 s lock) and creates exactly one order',
      async () => {
        const port = await freePort();
        const child: ChildProcess = spawn(process.execPath, [mainJs], {
          cwd: ROOT,
          env: {
            PATH: process.env.PATH ?? '',
            NODE_ENV: 'test',
            PORT: String(port),
            PUBLIC_URL,
            DATABASE_URL: url,
            ADMIN_EMAIL,
            ADMIN_PASSWORD,
            LOG_LEVEL: 'silent',
            PASSWORD_HASH_PROFILE: 'test',
            RATE_LIMIT: '1000000',
          },
          stdio: 'ignore',
        });
        const exited = new Promise((resolve) => child.on('exit', resolve));
        try {
          const base = `http://127.0.0.1:${port}`;
          await waitFor(
            async () => (await fetch(`${base}/health/ready`).catch(() => null))?.status === 200,
            { timeoutMs: 60_000, intervalMs: 200, what: 'the child instance to become ready' },
          );
          const before = await ordersOfUser();
          await slowNextAnswer(sql, 3);
          const key = unique('kill-');
          const sku = unique('sku-');
          const onChild = client(base, { basic: [user.email, user.password] });
          const pending = onChild
            .post(`/api/v1/users/${user.id}/orders`, orderBody(sku), {
              headers: { 'Idempotency-Key': key },
            })
            .catch(() => null);
          await answerWriteSleeping(admin, schema);
          child.kill('SIGKILL');
          await exited;
          expect(await pending).toBeNull(); // the client lost its answer
          const started = Date.now();
          const { res } = await retryUntilAnswered(
            () =>
              user.client.post(`/api/v1/users/${user.id}/orders`, orderBody(sku), {
                headers: { 'Idempotency-Key': key },
              }),
            scaled(15_000),
          );
          const waited = Date.now() - started;
          expect(res.status, res.text).toBe(201);
          expect(res.headers.get('idempotent-replayed')).toBeNull();
          expect(waited).toBeLessThan(10_000);
          expect(await ordersOfUser()).toBe(before + 1);
        } finally {
          child.kill('SIGKILL');
          await sql.run(`DROP TRIGGER IF EXISTS fault_slow_answer ON idempotency_keys`);
        }
      },
      scaled(120_000),
    );
  },
);
