import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Caller } from '../../src/identity/caller.js';
import { Role } from '../../src/identity/role.js';
import { restPageOf, type PageValue } from '../../src/database/connection-value.js';
import { AuditService } from '../../src/audit/audit.service.js';
import { OrdersService } from '../../src/orders/orders.service.js';
import { OrdersListService } from '../../src/orders/orders-list.service.js';
import { RoomsService } from '../../src/messages/rooms.service.js';
import { UsersService } from '../../src/users/users.service.js';
import {
  bootstrapAdmin,
  newUser,
  startServiceContext,
  type ServiceContext,
} from '../helpers/service.js';

/**
 * One service method per list answers REST and GraphQL (docs/lists.md, "Paging module"): the same
 * method, given a REST request (`{ rest }`) or a GraphQL window (`{ window, sort }`), reads the same
 * rows, counts the same total and names them with the list's cursors. The HTTP suites
 * (test/list-cursors, test/graphql-pagination, test/users, test/audit-totals...) check each wire
 * format; this file checks the rule that both come from one page, without a transport.
 */
describe('service: one page method per list, for REST and GraphQL', () => {
  let s: ServiceContext;
  let admin: Caller;

  beforeAll(async () => {
    s = await startServiceContext();
    admin = await bootstrapAdmin(s);
  });
  afterAll(() => s?.close());

  const ids = (page: PageValue<{ id: string }>) => page.nodes.map((n) => n.id);
  const cursors = (page: PageValue<unknown>) => page.edges.map((e) => e.cursor);

  it('users: a REST page and a window read the same users, total and cursors (created_at ascending)', async () => {
    const users = s.ctx.get(UsersService);
    for (let i = 0; i < 3; i++) {
      await newUser(s, admin, Role.GUEST);
    }
    const rest = await users.page(admin, { rest: { role: 'GUEST', limit: '2' } });
    const window = await users.page(
      admin,
      { window: { first: 2 }, sort: { field: 'created_at', desc: false } },
      { role: Role.GUEST },
    );
    expect(ids(rest)).toHaveLength(2);
    expect(ids(window)).toEqual(ids(rest));
    expect(cursors(window)).toEqual(cursors(rest));
    expect(await window.totalCount).toBe(await rest.totalCount);
    expect(await rest.totalCount).toBeGreaterThanOrEqual(3);

    // the REST page's `next` is the window's endCursor, and each follows from the other
    const restPage = await restPageOf(rest);
    expect(restPage.next).toBe(window.pageInfo.endCursor);
    expect(restPage.meta).toMatchObject({ page: 1, limit: 2 });
    const nextRest = await users.page(admin, {
      rest: { role: 'GUEST', limit: '2', cursor: restPage.next! },
    });
    const nextWindow = await users.page(
      admin,
      {
        window: { first: 2, after: window.pageInfo.endCursor },
        sort: { field: 'created_at', desc: false },
      },
      { role: Role.GUEST },
    );
    expect(ids(nextWindow)).toEqual(ids(nextRest));
    expect(await nextWindow.pageInfo.hasPreviousPage).toBe(true);

    // backwards from the second page's first user: the first page again, in list order
    const back = await users.page(
      admin,
      {
        window: { last: 2, before: nextWindow.pageInfo.startCursor },
        sort: { field: 'created_at', desc: false },
      },
      { role: Role.GUEST },
    );
    expect(ids(back)).toEqual(ids(rest));
    expect(await back.pageInfo.hasNextPage).toBe(true);
  });

  it('users: a window keeps the order key its connection has always issued, so a descending REST cursor is not one of its', async () => {
    const users = s.ctx.get(UsersService);
    await newUser(s, admin, Role.GUEST);
    await newUser(s, admin, Role.GUEST);
    const rest = await restPageOf(
      await users.page(admin, { rest: { role: 'GUEST', limit: '1', sort: '-name' } }),
    );
    expect(rest.next).toEqual(expect.any(String));
    await expect(
      users.page(
        admin,
        { window: { first: 1, after: rest.next }, sort: { field: 'name', desc: true } },
        { role: Role.GUEST },
      ),
    ).rejects.toMatchObject({ code: 'bad_request', details: [{ field: 'after' }] });
    // bad window arguments are refused as GraphQL names them
    await expect(
      users.page(admin, { window: { first: 101 }, sort: { field: 'created_at', desc: false } }),
    ).rejects.toMatchObject({ code: 'bad_request', message: 'Invalid paging arguments' });
  });

  it('rooms: a REST page and a window read the same rooms and total', async () => {
    const rooms = s.ctx.get(RoomsService);
    for (let i = 0; i < 3; i++) {
      await rooms.create(admin, { name: `list room ${i} ${Date.now()}` });
    }
    const rest = await rooms.page(admin, { rest: { limit: '3' } });
    const window = await rooms.page(admin, {
      window: { first: 3 },
      sort: { field: 'created_at', desc: false },
    });
    expect(ids(window)).toEqual(ids(rest));
    expect(ids(rest)).toHaveLength(3);
    expect(await window.totalCount).toBe(await rest.totalCount);
  });

  it('orders and the audit log: the GraphQL window reads the REST page, cursors included', async () => {
    const { caller: owner } = await newUser(s, admin, Role.USER);
    const create = s.ctx.get(OrdersService);
    for (let i = 0; i < 3; i++) {
      await create.create(owner, owner.userId, {
        currency: 'EUR',
        items: [{ sku: `SKU-${i}`, quantity: 1, unitPriceCents: 100 + i }],
      });
    }
    const orders = s.ctx.get(OrdersListService);
    const rest = await orders.page(owner, { rest: { limit: '2', sort: '-total_cents' } });
    const window = await orders.page(owner, {
      window: { first: 2 },
      sort: { field: 'total_cents', desc: true },
    });
    expect(ids(rest)).toHaveLength(2);
    expect(ids(window)).toEqual(ids(rest));
    expect(cursors(window)).toEqual(cursors(rest));
    expect(await window.totalCount).toBe(3);
    const rest2 = await orders.page(owner, {
      rest: { limit: '2', sort: '-total_cents', cursor: (await restPageOf(rest)).next! },
    });
    const window2 = await orders.page(owner, {
      window: { first: 2, after: window.pageInfo.endCursor },
      sort: { field: 'total_cents', desc: true },
    });
    expect(ids(window2)).toEqual(ids(rest2));
    expect(ids(window2)).toHaveLength(1);

    const audit = s.ctx.get(AuditService);
    const restAudit = await audit.page(admin, { rest: { action: 'user.created', limit: '2' } });
    const windowAudit = await audit.page(
      admin,
      { window: { first: 2 }, sort: { field: 'at', desc: true } },
      { action: 'user.created' },
    );
    expect(ids(windowAudit)).toEqual(ids(restAudit));
    expect(cursors(windowAudit)).toEqual(cursors(restAudit));
    expect(await windowAudit.totalCount).toBe(await restAudit.totalCount);
  });
});
