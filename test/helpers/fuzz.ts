import fc from 'fast-check';
import { DataSource } from 'typeorm';
import { ADMIN_EMAIL, ADMIN_PASSWORD, type TestApp } from './app.js';
import { createApiKey, createUser, tokenFor } from './factories.js';
import { client } from './http.js';

/**
 * Settings of a fuzz run. CI runs the test file with a fixed seed and a run count that fits its time
 * budget; `npm run fuzz` (scripts/fuzz.mjs) sets `FUZZ_RUNS` higher and a random `FUZZ_SEED`.
 * `FUZZ_PATH` (printed with a failure) replays one counterexample.
 */
export interface FuzzSettings {
  seed: number;
  path?: string;
  /** Runs of one property (each a request to the app). */
  runs(ciRuns: number): number;
  /** Wall-time cap of one property in CI (fast-check stops starting new runs past it). */
  timeLimitMs?: number;
  long: boolean;
}

const CI_SEED = 20261123;

export function fuzzSettings(): FuzzSettings {
  const runs = process.env.FUZZ_RUNS ? Number(process.env.FUZZ_RUNS) : undefined;
  if (runs !== undefined && !(Number.isInteger(runs) && runs > 0)) {
    throw new Error(`FUZZ_RUNS must be a positive integer, got ${process.env.FUZZ_RUNS}`);
  }
  const seed = process.env.FUZZ_SEED ? Number(process.env.FUZZ_SEED) : CI_SEED;
  if (!Number.isInteger(seed)) {
    throw new Error(`FUZZ_SEED must be an integer, got ${process.env.FUZZ_SEED}`);
  }
  const long = runs !== undefined;
  return {
    seed,
    path: process.env.FUZZ_PATH || undefined,
    runs: (ciRuns) => runs ?? ciRuns,
    // a slow machine runs fewer cases in CI rather than blow the suite's time; a long run is never cut
    timeLimitMs: long ? undefined : 15_000,
    long,
  };
}

/**
 * Runs a property; on failure throws one error with the counterexample, the seed and the command that
 * replays it.
 */
export async function assertProperty<T>(
  name: string,
  property: fc.IAsyncPropertyWithHooks<T>,
  settings: FuzzSettings,
  ciRuns: number,
): Promise<number> {
  const result = await fc.check(property, {
    seed: settings.seed,
    path: settings.path,
    numRuns: settings.runs(ciRuns),
    interruptAfterTimeLimit: settings.timeLimitMs,
    markInterruptAsFailure: false,
    // a case fetch refuses to send (fc.pre) is skipped, not failed
    maxSkipsPerRun: 1000,
  });
  if (result.failed) {
    const replay =
      `FUZZ_SEED=${result.seed} FUZZ_PATH=${result.counterexamplePath} FUZZ_RUNS=${settings.runs(ciRuns)} ` +
      `npm run fuzz -- -t "${name}"`;
    const error = result.errorInstance;
    const message =
      `property "${name}" failed after ${result.numRuns} runs (seed ${result.seed}, path ` +
      `${result.counterexamplePath}, ${result.numShrinks} shrinks)\n` +
      `counterexample: ${fc.stringify(result.counterexample)}\n` +
      `${error instanceof Error ? error.message : String(error)}\n` +
      `replay: ${replay}\n` +
      '(the app keeps state between runs: if the replayed path passes, rerun the whole seed)';
    console.error(message);
    throw new Error(message);
  }
  return result.numRuns;
}

// ---- state: every row of every table of the app's database ------------------------------------------

export type DbState = Map<string, string[]>;

/**
 * Columns that record the use of a credential rather than a change asked for: an API key's
 * `last_used_at` is written when the key authenticates a request (at most once a minute,
 * docs/decisions.md "API keys"), whatever the request's outcome.
 */
const BOOKKEEPING: Record<string, string[]> = { api_keys: ['last_used_at'] };

/**
 * Tables the webhook engine works on after a change committed (it marks events fanned out, deletes
 * them, leases and updates deliveries) while later requests run: a refused request must not add a
 * row to them, but what the engine does to earlier rows meanwhile is not that request's doing.
 */
const ENGINE_TABLES = new Set(['webhook_events', 'webhook_deliveries']);

/**
 * Tables that record the use of the API rather than a change asked for, written in batches in the
 * background (GraphQL deprecation usage, flushed every few seconds): whatever a request's outcome,
 * an earlier request's counts may land while it runs.
 */
const USAGE_TABLES = new Set(['deprecation_usage']);

/** Every row of every table (migrations aside), as sorted JSON lines per table. */
export async function dbState(t: TestApp): Promise<DbState> {
  const ds = t.app.get(DataSource);
  const pg = ds.options.type === 'postgres';
  const tables: { name: string }[] = pg
    ? await ds.query(
        `SELECT table_name AS name FROM information_schema.tables
          WHERE table_schema = current_schema() AND table_type = 'BASE TABLE'`,
      )
    : await ds.query(
        `SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'`,
      );
  const state: DbState = new Map();
  for (const { name } of tables) {
    if (name === 'migrations' || USAGE_TABLES.has(name)) {
      continue;
    }
    const rows: Record<string, unknown>[] = await ds.query(
      ENGINE_TABLES.has(name) ? `SELECT id FROM "${name}"` : `SELECT * FROM "${name}"`,
    );
    for (const column of BOOKKEEPING[name] ?? []) {
      rows.forEach((r) => delete r[column]);
    }
    state.set(name, rows.map((r) => JSON.stringify(r)).sort());
  }
  return state;
}

/** What differs between two states, or undefined. */
export function stateDiff(before: DbState, after: DbState): string | undefined {
  const lines: string[] = [];
  for (const table of new Set([...before.keys(), ...after.keys()])) {
    const a = new Set(before.get(table) ?? []);
    const b = new Set(after.get(table) ?? []);
    const gone = ENGINE_TABLES.has(table) ? [] : [...a].filter((r) => !b.has(r));
    const added = [...b].filter((r) => !a.has(r));
    if (gone.length || added.length) {
      lines.push(
        `${table}: ${gone.map((r) => `\n  - ${r}`).join('')}${added.map((r) => `\n  + ${r}`).join('')}`,
      );
    }
  }
  return lines.length ? lines.join('\n') : undefined;
}

// ---- values --------------------------------------------------------------------------------------

/** Strings that break naive code: control characters, lone surrogates, SQL and markup, huge. */
export const nastyString = fc.oneof(
  fc.constantFrom(
    '',
    ' ',
    '\u0000',
    'a\u0000b',
    '\ud800',
    '\udfff\ud800',
    '\u202e\u200b',
    '😀'.repeat(60),
    "' OR 1=1 --",
    '"; DROP TABLE users; --',
    '<script>alert(1)</script>',
    '%00',
    '../../etc/passwd',
    '__proto__',
    'constructor',
    'null',
    'NaN',
    '-0',
    '1e309',
    '9007199254740993',
    'x'.repeat(5000),
    'ADMIN',
    '2026-13-45T25:61:61Z',
  ),
  fc.string({ maxLength: 40, unit: 'binary' }),
  fc.string({ maxLength: 40, unit: 'grapheme' }),
);

export const nastyNumber = fc.oneof(
  fc.constantFrom(0, -0, -1, 1.5, 2 ** 31, 2 ** 31 - 1, -(2 ** 31) - 1, 2 ** 53 + 1, 1e308, -1e308),
  fc.integer(),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
);

/** Any JSON value, weighted towards the awkward ones. */
export const anyJson: fc.Arbitrary<unknown> = fc.oneof(
  { arbitrary: nastyString, weight: 3 },
  { arbitrary: nastyNumber, weight: 2 },
  { arbitrary: fc.constantFrom(null, true, false, [], {}), weight: 2 },
  { arbitrary: fc.jsonValue({ maxDepth: 3 }), weight: 2 },
  {
    arbitrary: fc.constantFrom(
      { __proto__: { role: 'ADMIN' } },
      JSON.parse('{"__proto__": {"isAdmin": true}}'),
      { constructor: { prototype: { role: 'ADMIN' } } },
    ),
    weight: 1,
  },
);

/** Header values a client may send (visible ASCII; fetch refuses the rest before sending). */
export const headerString = fc.string({
  maxLength: 60,
  unit: fc.integer({ min: 0x20, max: 0x7e }).map((c) => String.fromCharCode(c)),
});

export const acceptHeader = fc.oneof(
  fc.constantFrom(
    'application/json',
    '*/*',
    'application/*',
    'text/html',
    'application/xml',
    'application/json;q=0',
    'text/html, application/json;q=0.1',
    'application/json;q=0, */*;q=0.5',
    'application/graphql-response+json',
    'application/graphql-response+json, application/json;q=0.9',
    'application/merge-patch+json',
    'text/*',
    ';;;',
    '',
    'application/json; charset=utf-16',
  ),
  headerString,
);

export const acceptVersionHeader = fc.oneof(
  fc.constantFrom('1', 'v1', 'V1', '2', 'v2', '0', '', ' 1 ', '1, 2', '1.0', '-1', 'v'),
  headerString,
);

export const etagHeader = (known: () => string[]) =>
  fc.oneof(
    fc.constantFrom('*', '""', '"x"', 'W/"x"', 'W/', '"a", "b"', 'garbage', '*, "x"', ','),
    fc.constant(null).map(() => known()[0] ?? '"none"'),
    fc.constant(null).map(() => `W/${known()[0] ?? '"none"'}`),
    headerString,
  );

export const contentTypeHeader = fc.constantFrom(
  'application/json',
  'application/json; charset=utf-8',
  'application/json; charset=UTF-8',
  'application/json;charset=utf-8',
  'application/json; charset="utf-8"',
  'application/json; charset=latin1',
  'application/json; charset=iso-8859-1',
  'application/json; charset=utf-16le',
  'application/json; charset=bogus',
  'application/json; boundary=x',
  'APPLICATION/JSON',
  'application/merge-patch+json',
  'application/merge-patch+json; charset=utf-8',
  'application/problem+json',
  'application/jsonp',
  'application/graphql',
  'text/plain',
  'text/plain; charset=utf-8',
  'application/x-www-form-urlencoded',
  'multipart/form-data; boundary=x',
  'application/xml',
  'json',
  '',
  '*/*',
);

/** Encodes a body's text in the charset its content type names (sometimes), else UTF-8. */
export function encodeBody(text: string, contentType: string | undefined, honour: boolean): Buffer {
  const charset = /charset="?([^";]+)/i.exec(contentType ?? '')?.[1]?.toLowerCase();
  if (honour && (charset === 'utf-16le' || charset === 'utf-16')) {
    return Buffer.from(text, 'utf16le');
  }
  if (honour && (charset === 'latin1' || charset === 'iso-8859-1')) {
    return Buffer.from(text, 'latin1');
  }
  return Buffer.from(text, 'utf8');
}

export interface SentRequest {
  method: string;
  path: string;
  headers: Record<string, string>;
  body?: Buffer;
}

export interface Answer {
  status: number;
  headers: Headers;
  text: string;
  json: unknown;
  /** The body is JSON by its content type but does not parse. */
  badJson?: string;
}

/** Sends one request with fetch; `undefined` when fetch itself refuses to send it. */
export async function send(base: string, req: SentRequest): Promise<Answer | undefined> {
  let res: Response;
  try {
    res = await fetch(`${base}${req.path}`, {
      method: req.method,
      headers: req.headers,
      body: req.body,
      redirect: 'manual',
    });
  } catch (error) {
    // the client's own refusals (invalid header value, body on GET, forbidden method): not sent
    if (error instanceof TypeError && !(error as { cause?: unknown }).cause) {
      return undefined;
    }
    throw error;
  }
  const text = await res.text();
  let json: unknown;
  let badJson: string | undefined;
  const type = res.headers.get('content-type') ?? '';
  if (text && /json/i.test(type)) {
    try {
      // an export answers NDJSON: one JSON document per line
      json = /ndjson/i.test(type)
        ? text
            .trimEnd()
            .split('\n')
            .map((line) => JSON.parse(line) as unknown)
        : JSON.parse(text);
    } catch (error) {
      badJson = String(error);
    }
  }
  return { status: res.status, headers: res.headers, text, json, badJson };
}

/** The request, printable in a failure report. */
export function describeRequest(req: SentRequest): string {
  const body = req.body ? `\n${req.body.toString('utf8').slice(0, 2000)}` : '';
  return `${req.method} ${req.path}\n${Object.entries(req.headers)
    .map(([k, v]) => `${k}: ${v}`)
    .join('\n')}${body}`;
}

// ---- the world a fuzz run plays in: callers and the ids it may name ----------------------------------

const ID_PATTERN = /^(usr|ord|pst|rom|msg|key)_[0-9A-HJKMNP-TV-Z]{26}$/;

export interface World {
  /** Request headers per caller, `anonymous` included. */
  callers: Record<string, Record<string, string>>;
  /** Ids of resources the fuzzer may touch, by prefix (`usr`, `pst`, …; `client` for OAuth clients). */
  pools: Map<string, string[]>;
  /** ETags seen lately: If-Match / If-None-Match sometimes carry a real one. */
  etags: string[];
  /** Adds the ids named in a successful answer to the pools (never a caller's own user or key). */
  learn(value: unknown): void;
  /** A pool id by index (any kind), or undefined when every pool is empty. */
  pick(n: number, kind?: string): string | undefined;
  noteEtag(etag: string | null): void;
}

/**
 * Callers of every kind (ADMIN, USER, GUEST by Bearer, a USER's API key, Basic with a wrong password,
 * a forged token, anonymous) and one resource of each type. The callers' own users and keys are kept
 * out of the pools, so a fuzzed DELETE or password change never locks the run out.
 */
export async function buildWorld(t: TestApp): Promise<World> {
  const adminToken = await tokenFor(t.url, ADMIN_EMAIL, ADMIN_PASSWORD);
  const admin = client(t.url, { bearer: adminToken });
  const user = await createUser(t.url, { role: 'USER' });
  const guest = await createUser(t.url, { role: 'GUEST' });
  const victim = await createUser(t.url, { role: 'USER' });
  const userKey = await createApiKey(user.client);
  const protectedIds = new Set([user.id, guest.id, userKey.id]);
  const me = await admin.get('/api/v1/auth/me');
  protectedIds.add(me.body.data.id);

  const pools = new Map<string, string[]>();
  const etags: string[] = [];
  const world: World = {
    callers: {},
    pools,
    etags,
    learn(value) {
      const seen = new Set<string>();
      const walk = (v: unknown, key?: string) => {
        if (typeof v === 'string') {
          const m = ID_PATTERN.exec(v);
          if (m && !protectedIds.has(v)) {
            seen.add(`${m[1]} ${v}`);
          } else if (key === 'client_id' && v.length < 100) {
            seen.add(`client ${v}`);
          }
        } else if (Array.isArray(v)) {
          v.forEach((x) => walk(x));
        } else if (v && typeof v === 'object') {
          for (const [k, x] of Object.entries(v)) {
            walk(x, k);
          }
        }
      };
      walk(value);
      for (const entry of seen) {
        const [kind, id] = entry.split(' ');
        const pool = pools.get(kind) ?? [];
        if (!pool.includes(id)) {
          pool.push(id);
          // newest first, bounded: recently made resources are the interesting ones
          pool.sort((a, b) => (a < b ? 1 : -1));
          pool.length = Math.min(pool.length, 20);
        }
        pools.set(kind, pool);
      }
    },
    pick(n, kind) {
      const ids = kind ? (pools.get(kind) ?? []) : [...pools.values()].flat();
      return ids.length ? ids[n % ids.length] : undefined;
    },
    noteEtag(etag) {
      if (etag && !etags.includes(etag)) {
        etags.unshift(etag);
        etags.length = Math.min(etags.length, 5);
      }
    },
  };
  world.callers = {
    admin: { authorization: `Bearer ${adminToken}` },
    user: { authorization: `Bearer ${user.token}` },
    guest: { authorization: `Bearer ${guest.token}` },
    userApiKey: { 'x-api-key': userKey.key },
    anonymous: {},
    wrongPassword: {
      authorization: `Basic ${Buffer.from(`${victim.email}:not-the-password`).toString('base64')}`,
    },
    forgedBearer: { authorization: `Bearer ${user.token.slice(0, -4)}AAAA` },
    garbage: { authorization: 'Bearer' },
  };

  // one resource of each type, some of them the USER caller's own
  world.learn(victim.body);
  world.learn((await admin.post('/api/v1/posts', { title: 'fuzz', body: 'admin post' })).body);
  world.learn((await user.client.post('/api/v1/posts', { title: 'fuzz', body: 'own post' })).body);
  const items = [{ sku: 'FUZZ-1', quantity: 2, unit_price_cents: 150 }];
  world.learn(
    (await user.client.post(`/api/v1/users/${user.id}/orders`, { items, currency: 'EUR' })).body,
  );
  world.learn(
    (await admin.post(`/api/v1/users/${victim.id}/orders`, { items, currency: 'EUR' })).body,
  );
  const room = await user.client.post('/api/v1/rooms', { name: `fuzz ${Date.now()}` });
  world.learn(room.body);
  world.learn(
    (await user.client.post(`/api/v1/rooms/${room.body.data.id}/messages`, { content: 'hi' })).body,
  );
  world.learn((await createApiKey(victim.client)).id);
  world.learn(
    (
      await admin.post('/api/v1/oauth/clients', {
        name: 'fuzz',
        redirect_uris: ['https://fuzz.example/cb'],
        scopes: ['openid', 'users:read'],
      })
    ).body,
  );
  for (const kind of ['usr', 'pst', 'ord', 'rom', 'msg', 'key', 'client']) {
    if (!pools.get(kind)?.length) {
      throw new Error(`the fuzz world has no ${kind} id: ${JSON.stringify([...pools])}`);
    }
  }
  return world;
}
