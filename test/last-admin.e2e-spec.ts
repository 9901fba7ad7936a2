import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Logger } from '@nestjs/common';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { DatabaseService } from '../src/database/database.service.js';
import { gql } from './graphql-client.js';
import {
  ADMIN_EMAIL,
  ADMIN_PASSWORD,
  freshDatabaseUrl,
  startApp,
  usingPostgres,
  type TestApp,
} from './helpers/app.js';
import {
  adminClient,
  createUser,
  tokenFor,
  unique,
  type CreatedUser,
} from './helpers/factories.js';
import { client, request, type Client, type TestResponse } from './helpers/http.js';

/**
 * The last ADMIN (docs/contract.md): no path demotes or deletes it, also when two admins remove each
 * other at the same moment; at boot, ADMIN_EMAIL promotes an existing user when no ADMIN is left.
 */

const LAST_ADMIN = 'the last administrator cannot be removed';

async function storedUser(t: TestApp, id: string) {
  const db = t.app.get(DatabaseService);
  const [row] = await db.query<{ role: string; deleted_at: string | null; name: string }>(
    `SELECT role, deleted_at, name FROM users WHERE id = ${db.p(1)}`,
    [id],
  );
  return row;
}

/** Live ADMINs, straight from the table. */
async function liveAdmins(t: TestApp): Promise<string[]> {
  const db = t.app.get(DatabaseService);
  const rows = await db.query<{ id: string }>(
    `SELECT id FROM users WHERE role = 'ADMIN' AND deleted_at IS NULL ORDER BY id`,
  );
  return rows.map((r) => r.id);
}

function expectLastAdminConflict(res: TestResponse): void {
  expect(res.status, res.text).toBe(409);
  expect(res.headers.get('content-type')).toMatch(/^application\/json/);
  expect(res.body.error.code).toBe('conflict');
  expect(res.body.error.message).toContain(LAST_ADMIN);
}

async function idOf(c: Client): Promise<string> {
  const me = await c.get('/api/v1/auth/me');
  expect(me.status).toBe(200);
  return me.body.data.id as string;
}

describe('the last ADMIN cannot be removed', () => {
  let t: TestApp;
  let root: Client;
  let rootId: string;
  let rootToken: string;
  let alice: CreatedUser;

  beforeAll(async () => {
    t = await startApp();
    rootToken = await tokenFor(t.url, ADMIN_EMAIL, ADMIN_PASSWORD);
    root = client(t.url, { bearer: rootToken });
    rootId = await idOf(root);
    alice = await createUser(t.url, { name: 'Alice' });
  });
  afterAll(() => t?.close());

  async function expectUnchanged(): Promise<void> {
    const row = await storedUser(t, rootId);
    expect(row?.role).toBe('ADMIN');
    expect(row?.deleted_at).toBeNull();
    expect(await liveAdmins(t)).toEqual([rootId]);
    // the counted total agrees with the table
    const admins = await root.get('/api/v1/users?role=ADMIN');
    expect(admins.body.meta.total).toBe(1);
    expect(admins.body.data.map((u: { id: string }) => u.id)).toEqual([rootId]);
    // and it still administers
    expect((await root.get(`/api/v1/users/${alice.id}`)).status).toBe(200);
  }

  it('PATCH demoting itself -> 409 conflict, nothing changed', async () => {
    for (const role of ['USER', 'GUEST']) {
      expectLastAdminConflict(
        await root.patch(`/api/v1/users/${rootId}`, { role, name: 'Demoted' }),
      );
    }
    expect((await storedUser(t, rootId))?.name).not.toBe('Demoted');
    await expectUnchanged();
    // a PATCH that keeps the role still works
    const keep = await root.patch(`/api/v1/users/${rootId}`, { role: 'ADMIN', age: 40 });
    expect(keep.status).toBe(200);
    expect(keep.body.data.role).toBe('ADMIN');
  });

  it('PUT demoting itself -> 409 conflict, nothing changed', async () => {
    const res = await root.put(`/api/v1/users/${rootId}`, {
      name: 'Replaced',
      email: ADMIN_EMAIL,
      role: 'USER',
    });
    expectLastAdminConflict(res);
    expect((await storedUser(t, rootId))?.name).not.toBe('Replaced');
    await expectUnchanged();
  });

  it('DELETE of itself -> 409 conflict, nothing changed (also with a matching If-Match)', async () => {
    expectLastAdminConflict(await root.delete(`/api/v1/users/${rootId}`));
    const current = await root.get(`/api/v1/users/${rootId}`);
    const etag = current.headers.get('etag');
    expect(etag).toBeTruthy();
    expectLastAdminConflict(
      await root.delete(`/api/v1/users/${rootId}`, { headers: { 'if-match': etag! } }),
    );
    await expectUnchanged();
  });

  it('a batch with a demotion of the last ADMIN fails whole: 409 with the index, nothing written', async () => {
    const res = await root.post('/api/v1/users/batch', {
      operations: [
        { op: 'update', id: alice.id, data: { name: 'Renamed in batch' } },
        { op: 'create', data: { name: 'Batch New', email: `${unique()}@example.com` } },
        { op: 'update', id: rootId, data: { role: 'USER' } },
      ],
    });
    expectLastAdminConflict(res);
    expect(res.body.error.details).toEqual([expect.objectContaining({ index: 2 })]);
    expect((await storedUser(t, alice.id))?.name).toBe('Alice');
    const db = t.app.get(DatabaseService);
    const created = await db.query(`SELECT id FROM users WHERE name = 'Batch New'`);
    expect(created).toHaveLength(0);
    await expectUnchanged();
  });

  it('GraphQL updateUser and deleteUser -> CONFLICT, nothing changed', async () => {
    const update = await gql(
      t.url,
      'mutation($id: ID!) { updateUser(id: $id, input: { role: USER }) { id role } }',
      { auth: { bearer: rootToken }, variables: { id: rootId } },
    );
    expect(update.status).toBe(200);
    expect(update.body.data?.updateUser).toBeNull();
    expect(update.body.errors?.[0]?.extensions?.code).toBe('CONFLICT');
    expect(update.body.errors?.[0]?.message).toContain(LAST_ADMIN);
    const remove = await gql(t.url, 'mutation($id: ID!) { deleteUser(id: $id) { id } }', {
      auth: { bearer: rootToken },
      variables: { id: rootId },
    });
    expect(remove.body.data?.deleteUser).toBeNull();
    expect(remove.body.errors?.[0]?.extensions?.code).toBe('CONFLICT');
    expect(remove.body.errors?.[0]?.message).toContain(LAST_ADMIN);
    await expectUnchanged();
  });

  it('by anyone: another ADMIN may demote or delete an ADMIN while one remains, then not the last', async () => {
    const second = await createUser(t.url, { role: 'ADMIN' });
    const third = await createUser(t.url, { role: 'ADMIN' });
    // two others remain: fine
    const demoted = await second.client.patch(`/api/v1/users/${third.id}`, { role: 'USER' });
    expect(demoted.status).toBe(200);
    // self-delete while another ADMIN remains: fine
    expect((await second.client.delete(`/api/v1/users/${second.id}`)).status).toBe(204);
    expect(await liveAdmins(t)).toEqual([rootId]);
    // the demoted USER cannot touch the last ADMIN: its role rule answers first
    const byUser = await third.client.delete(`/api/v1/users/${rootId}`);
    expect(byUser.status).toBe(403);
    await expectUnchanged();
  });
});

/** Two ADMINs removing each other at the same moment: exactly one wins, one ADMIN remains. */
describe('the last ADMIN under concurrency', () => {
  const ROUNDS = 12;
  let t: TestApp;
  let a: CreatedUser;
  let b: CreatedUser;

  // each test starts from its own app with exactly two ADMINs (the tests run in any order)
  beforeEach(async () => {
    t = await startApp();
    a = await createUser(t.url, { role: 'ADMIN' });
    b = await createUser(t.url, { role: 'ADMIN' });
    const rootId = await idOf(await adminClient(t.url));
    // leave exactly the two of them
    expect((await a.client.delete(`/api/v1/users/${rootId}`)).status).toBe(204);
    expect((await liveAdmins(t)).sort()).toEqual([a.id, b.id].sort());
  });
  afterEach(() => t?.close());

  /** An ADMIN created by `by` (the bootstrap ADMIN is gone) and signed in. */
  async function newAdmin(by: CreatedUser): Promise<CreatedUser> {
    const email = `${unique()}@example.com`;
    const password = `pw-${unique()}-long`;
    const res = await by.client.post('/api/v1/users', {
      name: 'Partner',
      email,
      password,
      role: 'ADMIN',
    });
    expect(res.status).toBe(201);
    const token = await tokenFor(t.url, email, password);
    return {
      id: res.body.data.id as string,
      email,
      password,
      token,
      client: client(t.url, { bearer: token }),
      body: res.body.data,
    };
  }

  it(`concurrent demotions (${ROUNDS} rounds; PATCH, PUT, GraphQL; of itself and of each other): one succeeds, one ADMIN left`, async () => {
    for (let round = 0; round < ROUNDS; round++) {
      const demote = (by: CreatedUser, target: CreatedUser): Promise<number> => {
        switch (round % 3) {
          case 0:
            return by.client
              .patch(`/api/v1/users/${target.id}`, { role: 'USER' })
              .then((r) => r.status);
          case 1:
            return by.client
              .put(`/api/v1/users/${target.id}`, {
                name: `Admin ${target.id.slice(-4)}`,
                email: target.email,
                role: 'GUEST',
              })
              .then((r) => r.status);
          default:
            return gql(
              t.url,
              'mutation($id: ID!) { updateUser(id: $id, input: { role: USER }) { id } }',
              { auth: { bearer: by.token }, variables: { id: target.id } },
            ).then((r) => {
              const code = r.body.errors?.[0]?.extensions?.code;
              return code === 'CONFLICT'
                ? 409
                : code === 'FORBIDDEN'
                  ? 403
                  : r.body.data?.updateUser
                    ? 200
                    : 500;
            });
        }
      };
      // even rounds: each demotes itself; odd rounds: each demotes the other. The loser of a
      // cross round may be handled after the winner committed, and then is no ADMIN any more (403)
      const self = round % 2 === 0;
      const statuses = await Promise.all(
        self ? [demote(a, a), demote(b, b)] : [demote(a, b), demote(b, a)],
      );
      expect(
        statuses.filter((s) => s === 200),
        `round ${round}: ${statuses.join(',')}`,
      ).toHaveLength(1);
      const refused = statuses.find((s) => s !== 200);
      expect(self ? [409] : [409, 403], `round ${round}: ${statuses.join(',')}`).toContain(refused);
      const left = await liveAdmins(t);
      expect(left, `round ${round}`).toHaveLength(1);
      // the survivor promotes the other back for the next round
      const survivor = left[0] === a.id ? a : b;
      const other = survivor === a ? b : a;
      const back = await survivor.client.patch(`/api/v1/users/${other.id}`, { role: 'ADMIN' });
      expect(back.status).toBe(200);
    }
    const admins = await a.client.get('/api/v1/users?role=ADMIN');
    expect(admins.body.meta.total).toBe(2);
  });

  it(`concurrent deletes (${ROUNDS} rounds; of itself and of each other): one succeeds, one ADMIN left`, async () => {
    let survivor = a;
    expect((await a.client.patch(`/api/v1/users/${b.id}`, { role: 'USER' })).status).toBe(200);
    expect(await liveAdmins(t)).toEqual([a.id]);
    for (let round = 0; round < ROUNDS; round++) {
      const other = await newAdmin(survivor);
      // even rounds: each deletes itself; odd rounds: each deletes the other (the loser may be
      // handled after the winner committed: a deleted user's credentials are then refused, 401)
      const self = round % 2 === 0;
      const statuses = (
        await Promise.all(
          self
            ? [
                survivor.client.delete(`/api/v1/users/${survivor.id}`),
                other.client.delete(`/api/v1/users/${other.id}`),
              ]
            : [
                survivor.client.delete(`/api/v1/users/${other.id}`),
                other.client.delete(`/api/v1/users/${survivor.id}`),
              ],
        )
      ).map((r) => r.status);
      expect(
        statuses.filter((s) => s === 204),
        `round ${round}: ${statuses.join(',')}`,
      ).toHaveLength(1);
      const refused = statuses.find((s) => s !== 204);
      expect(self ? [409] : [409, 401], `round ${round}: ${statuses.join(',')}`).toContain(refused);
      const left = await liveAdmins(t);
      expect(left, `round ${round}`).toHaveLength(1);
      survivor = left[0] === other.id ? other : survivor;
    }
    const admins = await survivor.client.get('/api/v1/users?role=ADMIN');
    expect(admins.body.meta.total).toBe(1);
  });
});

/** ADMIN_EMAIL at boot on a database that has users but no ADMIN. */
describe('boot-time promotion of ADMIN_EMAIL', () => {
  let dir: string;
  const warnings: string[] = [];

  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'atrium-last-admin-'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  beforeEach(() => {
    warnings.length = 0;
    vi.spyOn(Logger.prototype, 'warn').mockImplementation(function (this: Logger, message) {
      warnings.push(String(message));
    });
  });
  afterEach(() => {
    vi.restoreAllMocks();
  });

  function durableUrl(name: string): string {
    return usingPostgres ? freshDatabaseUrl() : `sqlite:${join(dir, `${name}.sqlite`)}`;
  }

  /** A first boot with the default ADMIN, some users, then the ADMIN demoted directly in SQL. */
  async function databaseWithoutAdmin(
    name: string,
    prepare: (t: TestApp) => Promise<void> = async () => {},
  ): Promise<string> {
    const url = durableUrl(name);
    const first = await startApp({ DATABASE_URL: url });
    try {
      await prepare(first);
      const db = first.app.get(DatabaseService);
      await db.query(`UPDATE users SET role = 'USER' WHERE email_normalized = ${db.p(1)}`, [
        ADMIN_EMAIL,
      ]);
      expect(await liveAdmins(first)).toEqual([]);
    } finally {
      await first.close();
    }
    return url;
  }

  it('promotes the named USER, which keeps its own password; logged at warn', async () => {
    let user!: CreatedUser;
    const url = await databaseWithoutAdmin('promote', async (t) => {
      user = await createUser(t.url, { name: 'Heir' });
    });
    const envPassword = 'an-operator-password-1';
    const second = await startApp({
      DATABASE_URL: url,
      ADMIN_EMAIL: user.email.toUpperCase(),
      ADMIN_PASSWORD: envPassword,
    });
    try {
      expect(await liveAdmins(second)).toEqual([user.id]);
      expect(warnings.some((w) => w.includes(user.id) && w.includes('promoted'))).toBe(true);
      // its own password signs in; ADMIN_PASSWORD does not (it was not applied)
      const token = await tokenFor(second.url, user.email, user.password);
      const bad = await request(second.url, '/api/v1/auth/token', {
        method: 'POST',
        body: { email: user.email, password: envPassword },
      });
      expect(bad.status).toBe(401);
      const heir = client(second.url, { bearer: token });
      const me = await heir.get(`/api/v1/users/${user.id}`);
      expect(me.body.data.role).toBe('ADMIN');
      // it administers: creates a user, and is counted as the one ADMIN
      const made = await heir.post('/api/v1/users', {
        name: 'Made by heir',
        email: `${unique()}@example.com`,
      });
      expect(made.status).toBe(201);
      const admins = await heir.get('/api/v1/users?role=ADMIN');
      expect(admins.body.data.map((u: { id: string }) => u.id)).toEqual([user.id]);
      // the demoted former ADMIN was not created again nor promoted back
      const db = second.app.get(DatabaseService);
      const [former] = await db.query<{ role: string }>(
        `SELECT role FROM users WHERE email_normalized = ${db.p(1)}`,
        [ADMIN_EMAIL],
      );
      expect(former?.role).toBe('USER');
    } finally {
      await second.close();
    }
    // a later boot finds the ADMIN and changes nothing
    const third = await startApp({
      DATABASE_URL: url,
      ADMIN_EMAIL: ADMIN_EMAIL,
      ADMIN_PASSWORD: ADMIN_PASSWORD,
    });
    try {
      expect(await liveAdmins(third)).toEqual([user.id]);
      expect((await storedUser(third, user.id))?.role).toBe('ADMIN');
    } finally {
      await third.close();
    }
  });

  it('a named user without a password is promoted and gets ADMIN_PASSWORD', async () => {
    const email = `${unique()}@example.com`;
    let id = '';
    const url = await databaseWithoutAdmin('passwordless', async (t) => {
      const res = await (await adminClient(t.url)).post('/api/v1/users', { name: 'NoPw', email });
      expect(res.status).toBe(201);
      id = res.body.data.id as string;
    });
    const password = 'an-operator-password-2';
    const second = await startApp({
      DATABASE_URL: url,
      ADMIN_EMAIL: email,
      ADMIN_PASSWORD: password,
    });
    try {
      expect(await liveAdmins(second)).toEqual([id]);
      const token = await tokenFor(second.url, email, password);
      const me = await client(second.url, { bearer: token }).get(`/api/v1/users/${id}`);
      expect(me.body.data.role).toBe('ADMIN');
    } finally {
      await second.close();
    }
  });

  it('a soft-deleted named user stays deleted: a new ADMIN is created with ADMIN_PASSWORD', async () => {
    let gone!: CreatedUser;
    const url = await databaseWithoutAdmin('deleted', async (t) => {
      gone = await createUser(t.url, { name: 'Gone' });
      expect((await (await adminClient(t.url)).delete(`/api/v1/users/${gone.id}`)).status).toBe(
        204,
      );
    });
    const password = 'an-operator-password-3';
    const second = await startApp({
      DATABASE_URL: url,
      ADMIN_EMAIL: gone.email,
      ADMIN_PASSWORD: password,
    });
    try {
      const admins = await liveAdmins(second);
      expect(admins).toHaveLength(1);
      expect(admins[0]).not.toBe(gone.id);
      expect((await storedUser(second, gone.id))?.deleted_at).not.toBeNull();
      expect((await storedUser(second, gone.id))?.role).toBe('USER');
      const token = await tokenFor(second.url, gone.email, password);
      const me = await client(second.url, { bearer: token }).get(`/api/v1/users/${admins[0]}`);
      expect(me.body.data.role).toBe('ADMIN');
      expect(warnings.some((w) => w.includes('promoted'))).toBe(false);
    } finally {
      await second.close();
    }
  });
});
