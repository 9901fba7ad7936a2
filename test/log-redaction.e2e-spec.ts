import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freshDatabaseUrl, usingPostgres } from './helpers/app.js';
import { waitFor } from './helpers/wait.js';
import { serviceBuild } from './helpers/build.js';
import { request } from './helpers/http.js';

/**
 * Database errors must never put a statement's parameters (an email, a password hash) into the logs.
 * Seen from outside: the service runs as a process (a build of its own or CI's, test/helpers/build.ts),
 * a trigger makes the INSERT of a registration fail, and
 * the process's log lines are searched for the values.
 */
const ROOT = new URL('..', import.meta.url).pathname;
// better-sqlite3 ships no type declarations: the two methods used here
const Database = createRequire(import.meta.url)('better-sqlite3') as new (path: string) => {
  exec(sql: string): void;
  close(): void;
};

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const srv = createServer();
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as { port: number };
      srv.close(() => resolve(port));
    });
  });
}

describe('database errors in the logs', () => {
  let dir: string;
  let child: ChildProcess | undefined;
  let out = '';
  let base: string;
  const databaseUrl = usingPostgres ? freshDatabaseUrl() : '';

  beforeAll(async () => {
    const build = serviceBuild();
    dir = mkdtempSync(join(tmpdir(), 'atrium-logs-'));
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    child = spawn(process.execPath, [join(build, 'main.js')], {
      cwd: ROOT,
      env: {
        PATH: process.env.PATH ?? '',
        NODE_ENV: 'production',
        PORT: String(port),
        DATA_DIR: dir,
        DATABASE_URL: usingPostgres ? databaseUrl : `sqlite:${join(dir, 'logs.sqlite')}`,
        LOG_LEVEL: 'debug', // TypeORM's failed-statement lines too
      },
    });
    child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
    await waitFor(
      async () => {
        try {
          return (await fetch(`${base}/health/ready`)).status === 200;
        } catch {
          return false; // not listening yet
        }
      },
      { timeoutMs: 30_000, intervalMs: 100, what: () => `readiness of the app:\n${out}` },
    );
    await addFailingTrigger();
  }, 180_000);

  afterAll(async () => {
    if (child && child.exitCode === null) {
      const exited = new Promise((resolve) => child!.once('exit', resolve));
      child.kill('SIGTERM');
      await exited;
    }
    rmSync(dir, { recursive: true, force: true });
  });

  /** Registering a user named "boom" now fails inside the database, with the row's values at hand. */
  async function addFailingTrigger(): Promise<void> {
    if (!usingPostgres) {
      const db = new Database(join(dir, 'logs.sqlite'));
      db.exec(`CREATE TRIGGER boom BEFORE INSERT ON users WHEN NEW.name = 'boom'
               BEGIN SELECT RAISE(ABORT, 'forced failure'); END`);
      db.close();
      return;
    }
    const u = new URL(databaseUrl);
    const schema = u.searchParams.get('schema')!;
    u.searchParams.delete('schema');
    const client = new pg.Client({ connectionString: u.toString() });
    await client.connect();
    try {
      // a NOT NULL violation: PostgreSQL's `detail` then holds the whole row ("Failing row contains …")
      await client.query(`CREATE FUNCTION "${schema}".boom() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN IF NEW.name = 'boom' THEN NEW.created_at := NULL; END IF; RETURN NEW; END $$`);
      await client.query(`CREATE TRIGGER boom BEFORE INSERT ON "${schema}".users
        FOR EACH ROW EXECUTE FUNCTION "${schema}".boom()`);
    } finally {
      await client.end();
    }
  }

  it('logs the failure (500) and the unique violation (409) without any parameter value', async () => {
    const email = `Secret.${randomBytes(4).toString('hex')}@Example.com`;
    const password = `pw-${randomBytes(8).toString('hex')}`;
    const failed = await request(base, '/api/v1/auth/register', {
      method: 'POST',
      body: { name: 'boom', email, password },
      headers: { 'x-request-id': 'redaction-500' },
    });
    expect(failed.status).toBe(500);
    expect(failed.body.error.code).toBe('internal_error');

    const taken = `Taken.${randomBytes(4).toString('hex')}@example.com`;
    const first = await request(base, '/api/v1/auth/register', {
      method: 'POST',
      body: { name: 'first', email: taken, password },
    });
    expect(first.status).toBe(201);
    const dup = await request(base, '/api/v1/auth/register', {
      method: 'POST',
      body: { name: 'second', email: taken, password },
      headers: { 'x-request-id': 'redaction-409' },
    });
    expect(dup.status).toBe(409);

    // the sentinel: the 409's own request line, the last line of the last request. The process
    // writes its lines to one pipe in order, so once it is out every line of both requests is
    const parsed = () =>
      out
        .split('\n')
        .filter((l) => l.startsWith('{') && l.endsWith('}'))
        .map((l) => JSON.parse(l) as Record<string, any>);
    const lines = await waitFor(
      () => {
        const all = parsed();
        return (
          all.some((l) => l.request_id === 'redaction-409' && l.res?.statusCode === 409) && all
        );
      },
      { what: () => `the request line of redaction-409 in:\n${out}` },
    );
    // the 500 was logged, with its statement but without its values
    const errorLine = lines.find((l) => l.request_id === 'redaction-500' && l.err);
    expect(errorLine, out).toBeDefined();
    expect(errorLine!.err.query).toMatch(/INSERT INTO "users"/);
    expect(errorLine!.err.parameters).toBe('[redacted]');
    // TypeORM's own failed-statement lines (debug) say how many parameters, not which
    expect(out).toMatch(/parameter\(s\) redacted/);

    for (const secret of [
      email,
      email.toLowerCase(),
      taken,
      taken.toLowerCase(),
      password,
      '$argon2',
    ]) {
      expect(out, `the log carries ${secret}`).not.toContain(secret);
    }
  });
});
