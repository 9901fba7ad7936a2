import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Caller } from '../../src/identity/caller.js';
import { Role } from '../../src/identity/role.js';
import { OrderStatus } from '../../src/domain/order.js';
import { OrdersService } from '../../src/orders/orders.service.js';
import {
  bootstrapAdmin,
  newUser,
  startServiceContext,
  type ServiceContext,
} from '../helpers/service.js';

/**
 * The order state machine and who may move an order (docs/contract.md section 7), through
 * OrdersService.updateStatus with a caller of each role: what test/orders.e2e-spec.ts reaches only
 * through PATCH /orders/{id}. An invalid transition is a conflict for everyone, checked before the
 * role; a valid one the caller may not make is forbidden; a refused change leaves the order as it was.
 */
describe('service: order status changes by role', () => {
  let s: ServiceContext;
  let orders: OrdersService;
  let admin: Caller;

  beforeAll(async () => {
    s = await startServiceContext();
    orders = s.ctx.get(OrdersService);
    admin = await bootstrapAdmin(s);
  });
  afterAll(() => s?.close());

  const orderOf = async (owner: Caller) =>
    orders.create(owner, owner.userId, {
      currency: 'EUR',
      items: [{ sku: 'SKU-1', quantity: 2, unitPriceCents: 500 }],
    });

  it('an ADMIN walks an order through pending -> paid -> shipped -> delivered, and delivered is final', async () => {
    const { caller: owner } = await newUser(s, admin, Role.USER);
    const order = await orderOf(owner);
    expect(order.status).toBe(OrderStatus.PENDING);
    for (const status of [OrderStatus.PAID, OrderStatus.SHIPPED, OrderStatus.DELIVERED]) {
      const moved = await orders.updateStatus(admin, order.id, status);
      expect(moved.status).toBe(status);
      expect(moved.updatedAt > order.updatedAt).toBe(true);
    }
    for (const status of [OrderStatus.CANCELLED, OrderStatus.SHIPPED, OrderStatus.PENDING]) {
      await expect(orders.updateStatus(admin, order.id, status)).rejects.toMatchObject({
        code: 'conflict',
        message: expect.stringContaining('delivered is final'),
      });
    }
    expect((await orders.get(admin, order.id)).status).toBe(OrderStatus.DELIVERED);
  });

  it('an invalid transition is a conflict whoever asks (skipping a step, staying put), before the role is looked at', async () => {
    const { caller: owner } = await newUser(s, admin, Role.USER);
    const order = await orderOf(owner);
    await expect(orders.updateStatus(admin, order.id, OrderStatus.SHIPPED)).rejects.toMatchObject({
      code: 'conflict',
      details: [{ field: 'status', message: 'invalid transition pending -> shipped' }],
    });
    await expect(orders.updateStatus(admin, order.id, OrderStatus.PENDING)).rejects.toMatchObject({
      code: 'conflict',
    });
    // the owner may not ship either, but an invalid transition answers conflict, not forbidden
    await expect(orders.updateStatus(owner, order.id, OrderStatus.DELIVERED)).rejects.toMatchObject(
      { code: 'conflict' },
    );
    expect((await orders.get(owner, order.id)).status).toBe(OrderStatus.PENDING);
  });

  it('a USER may cancel their own pending order and nothing else: paying it or cancelling a paid one is forbidden', async () => {
    const { caller: owner } = await newUser(s, admin, Role.USER);
    const pending = await orderOf(owner);
    await expect(orders.updateStatus(owner, pending.id, OrderStatus.PAID)).rejects.toMatchObject({
      code: 'forbidden',
      message: 'You may only cancel your own pending orders',
    });
    const paid = await orderOf(owner);
    await orders.updateStatus(admin, paid.id, OrderStatus.PAID);
    await expect(orders.updateStatus(owner, paid.id, OrderStatus.CANCELLED)).rejects.toMatchObject({
      code: 'forbidden',
    });
    expect((await orders.get(owner, paid.id)).status).toBe(OrderStatus.PAID);
    const cancelled = await orders.updateStatus(owner, pending.id, OrderStatus.CANCELLED);
    expect(cancelled.status).toBe(OrderStatus.CANCELLED);
    // cancelled is final, for the ADMIN too
    await expect(orders.updateStatus(admin, pending.id, OrderStatus.PAID)).rejects.toMatchObject({
      code: 'conflict',
      message: expect.stringContaining('cancelled is final'),
    });
  });

  it("a USER may not touch another user's order, a GUEST no order at all, an anonymous caller is unauthorized", async () => {
    const { caller: owner } = await newUser(s, admin, Role.USER);
    const { caller: other } = await newUser(s, admin, Role.USER);
    const { caller: guest } = await newUser(s, admin, Role.GUEST);
    const order = await orderOf(owner);
    await expect(orders.updateStatus(other, order.id, OrderStatus.CANCELLED)).rejects.toMatchObject(
      { code: 'forbidden', message: 'You may only access your own orders' },
    );
    await expect(orders.updateStatus(guest, order.id, OrderStatus.CANCELLED)).rejects.toMatchObject(
      { code: 'forbidden', message: 'Guests may not access orders' },
    );
    await expect(
      orders.updateStatus(undefined, order.id, OrderStatus.CANCELLED),
    ).rejects.toMatchObject({ code: 'unauthorized' });
    await expect(orderOf(guest)).rejects.toMatchObject({ code: 'forbidden' });
    expect((await orders.get(owner, order.id)).status).toBe(OrderStatus.PENDING);
  });
});
