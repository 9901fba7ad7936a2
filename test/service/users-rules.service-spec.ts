import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Caller } from '../../src/identity/caller.js';
import { Role } from '../../src/identity/role.js';
import { OrdersService } from '../../src/orders/orders.service.js';
import { LAST_ADMIN_MESSAGE } from '../../src/users/admin-rules.service.js';
import { UserAccountsService } from '../../src/users/user-accounts.service.js';
import { UsersService } from '../../src/users/users.service.js';
import { unique } from '../helpers/factories.js';
import {
  bootstrapAdmin,
  newUser,
  startServiceContext,
  type ServiceContext,
} from '../helpers/service.js';

/**
 * The last-ADMIN rule (docs/contract.md, "The last ADMIN") through UserAccountsService, on a database
 * of its own: the rule depends on how many administrators exist, so nothing else runs on it.
 */
describe('service: the last ADMIN', () => {
  let s: ServiceContext;

  beforeAll(async () => {
    s = await startServiceContext();
  });
  afterAll(() => s?.close());

  it('the only ADMIN can be neither deleted nor demoted; with a second ADMIN either may go, not both', async () => {
    const accounts = s.ctx.get(UserAccountsService);
    const users = s.ctx.get(UsersService);
    const first = await bootstrapAdmin(s);
    const refused = { code: 'conflict', message: LAST_ADMIN_MESSAGE };
    await expect(accounts.remove(first, first.userId)).rejects.toMatchObject(refused);
    await expect(accounts.update(first, first.userId, { role: Role.USER })).rejects.toMatchObject(
      refused,
    );
    expect((await users.get(first, first.userId)).role).toBe(Role.ADMIN);

    const { caller: second } = await newUser(s, first, Role.ADMIN);
    const demoted = await accounts.update(second, first.userId, { role: Role.USER });
    expect(demoted.role).toBe(Role.USER);
    // the second is now the only one
    await expect(accounts.remove(second, second.userId)).rejects.toMatchObject(refused);
    await expect(
      accounts.update(second, second.userId, { role: Role.GUEST }),
    ).rejects.toMatchObject(refused);
    expect((await users.get(second, second.userId)).role).toBe(Role.ADMIN);
    // with another ADMIN again, the second may delete itself
    await accounts.update(second, first.userId, { role: Role.ADMIN });
    expect(await accounts.remove(second, second.userId)).toMatchObject({ id: second.userId });
    const admins = await users.page(first, { rest: { role: Role.ADMIN } });
    expect(admins.nodes.map((u) => u.id)).toEqual([first.userId]);
  });
});

/**
 * List query parsing (docs/lists.md) through the services' list methods: every wrong parameter is
 * named in one bad_request, and nothing is read. test/query-params.e2e-spec.ts checks the same through
 * HTTP, where the transport's own checks answer first.
 */
describe('service: list query parameters', () => {
  let s: ServiceContext;

  beforeAll(async () => {
    s = await startServiceContext();
  });
  afterAll(() => s?.close());

  const fields = (err: unknown) =>
    ((err as { details?: { field?: string }[] }).details ?? []).map((d) => d.field);

  it('a users list names every invalid parameter at once: page, limit, sort, role', async () => {
    const users = s.ctx.get(UsersService);
    const admin = await bootstrapAdmin(s);
    const err = await users
      .page(admin, { rest: { page: '0', limit: '101', sort: 'email', role: 'ROOT' } })
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    expect(err).toMatchObject({ code: 'bad_request', message: 'Invalid query parameters' });
    expect(fields(err).sort()).toEqual(['limit', 'page', 'role', 'sort']);
    for (const query of [{ sort: 'name,-name' }, { sort: '' }, { page: '1.5' }, { limit: 'ten' }]) {
      await expect(users.page(admin, { rest: query }), JSON.stringify(query)).rejects.toMatchObject(
        {
          code: 'bad_request',
        },
      );
    }
    // the same parameters, well-formed, are a page
    const page = await users.page(admin, {
      rest: { page: '1', limit: '100', sort: '-name', role: 'ADMIN' },
    });
    expect(page.nodes.every((u) => u.role === Role.ADMIN)).toBe(true);
  });

  it('a page deeper than the offset limit is refused and points at the cursor; a cursor must look like one', async () => {
    const users = s.ctx.get(UsersService);
    const admin = await bootstrapAdmin(s);
    await expect(users.page(admin, { rest: { page: '101', limit: '100' } })).rejects.toMatchObject({
      code: 'bad_request',
      details: [{ field: 'page', message: expect.stringContaining('Link rel="next"') }],
    });
    await expect(users.page(admin, { rest: { page: '100', limit: '100' } })).resolves.toMatchObject(
      {
        nodes: [],
      },
    );
    await expect(users.page(admin, { rest: { cursor: 'not a cursor!' } })).rejects.toMatchObject({
      code: 'bad_request',
      details: [{ field: 'cursor' }],
    });
  });

  it("an orders list refuses an unknown status and sort, after the caller's rights", async () => {
    const orders = s.ctx.get(OrdersService);
    const admin = await bootstrapAdmin(s);
    const { caller: owner } = await newUser(s, admin, Role.USER);
    const { caller: other } = await newUser(s, admin, Role.USER);
    const listOf = (caller: Caller, rest: Record<string, string>) =>
      orders.ordersOfUsers(caller, [owner.userId], { rest });
    await expect(listOf(owner, { status: 'lost', sort: 'total' })).rejects.toMatchObject({
      code: 'bad_request',
      details: [{ field: 'sort' }, { field: 'status' }],
    });
    // rights first: another user's list is forbidden whatever the parameters
    await expect(listOf(other, { status: 'lost' })).rejects.toMatchObject({ code: 'forbidden' });
    await expect(listOf(owner, { status: 'pending', sort: '-created_at' })).resolves.toMatchObject([
      { nodes: [] },
    ]);
  });
});

/**
 * Who may create and delete accounts (docs/contract.md section 7, docs/oauth.md), through
 * UserAccountsService with callers the HTTP tests need a credential of each kind for.
 */
describe('service: who may create and delete accounts', () => {
  let s: ServiceContext;

  beforeAll(async () => {
    s = await startServiceContext();
  });
  afterAll(() => s?.close());

  it('only an ADMIN creates users, and not through a partner app; a USER deletes themself only', async () => {
    const accounts = s.ctx.get(UserAccountsService);
    const users = s.ctx.get(UsersService);
    const admin = await bootstrapAdmin(s);
    const { caller: user } = await newUser(s, admin, Role.USER);
    const { user: other, caller: guest } = await newUser(s, admin, Role.GUEST);
    const live = await (await users.page(admin, { rest: {} })).totalCount;
    const input = { name: 'New', email: `new.${unique()}@example.com`, role: Role.USER };
    await expect(accounts.create(user, input)).rejects.toMatchObject({
      code: 'forbidden',
      message: 'Only administrators can create users',
    });
    await expect(accounts.create(guest, input)).rejects.toMatchObject({ code: 'forbidden' });
    // an ADMIN's OAuth token, even with the admin scope: account fields stay first-party
    const app = { ...admin, method: 'oauth' as const, clientId: 'cli_partner', scopes: ['admin'] };
    await expect(accounts.create(app, input)).rejects.toMatchObject({
      code: 'forbidden',
      message: expect.stringContaining('A partner app cannot create users'),
    });
    // none of the refused calls created the user
    expect(await (await users.page(admin, { rest: {} })).totalCount).toBe(live);

    await expect(accounts.remove(user, other.id)).rejects.toMatchObject({ code: 'forbidden' });
    expect((await users.get(admin, other.id)).id).toBe(other.id);
    expect(await accounts.remove(user, user.userId)).toMatchObject({ id: user.userId });
    await expect(users.get(admin, user.userId)).rejects.toMatchObject({ code: 'not_found' });
  });
});
