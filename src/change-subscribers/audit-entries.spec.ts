import { describe, expect, it } from 'vitest';
import type { Caller } from '../identity/caller.js';
import { Role } from '../identity/role.js';
import { OrderStatus, type Order } from '../domain/order.js';
import type { Room } from '../domain/message.js';
import type { Post } from '../domain/post.js';
import type { User } from '../domain/user.js';
import type { Change } from '../changes/change.js';
import { auditEntries } from './audit-entries.js';

const admin: Caller = { userId: 'usr_admin', role: Role.ADMIN, method: 'jwt' };
const customer: Caller = { userId: 'usr_customer', role: Role.USER, method: 'jwt' };
const user: User = {
  id: 'usr_1',
  name: 'Ada',
  email: 'ada@example.com',
  role: Role.USER,
  age: null,
  createdAt: '2026-01-01T00:00:00.000Z',
  updatedAt: '2026-01-01T00:00:00.000Z',
};
const order: Order = {
  id: 'ord_1',
  userId: customer.userId,
  status: OrderStatus.PENDING,
  items: [],
  totalCents: 100,
  currency: 'EUR',
  createdAt: '2026-01-01T00:00:00.000Z',
  updatedAt: '2026-01-01T00:00:00.000Z',
};

describe('the audit rules (auditEntries)', () => {
  const actions = (change: Change) => auditEntries(change).map((e) => e.action);

  it('audits a user created by a caller, not a registration nor the boot', () => {
    expect(actions({ type: 'user.created', user, actor: admin })).toEqual(['user.created']);
    expect(actions({ type: 'user.created', user, actor: null })).toEqual([]);
    expect(actions({ type: 'user.created', user, actor: 'system' })).toEqual([]);
  });

  it('audits a role change, as admin.promoted_at_boot when the system made it', () => {
    const after = { ...user, role: Role.ADMIN };
    const change = { type: 'user.updated', before: user, after, passwordChanged: false } as const;
    expect(auditEntries({ ...change, actor: admin })).toEqual([
      {
        actor: admin,
        action: 'user.role_changed',
        target: { type: 'user', id: user.id },
        changes: { role: [Role.USER, Role.ADMIN] },
      },
    ]);
    expect(actions({ ...change, actor: 'system' })).toEqual(['admin.promoted_at_boot']);
    expect(actions({ ...change, after: user, actor: admin })).toEqual([]);
  });

  it('audits a password set by an ADMIN, not by the user themself nor the boot', () => {
    const change = {
      type: 'user.updated',
      before: user,
      after: user,
      passwordChanged: true,
    } as const;
    expect(actions({ ...change, actor: admin })).toEqual(['user.password_set']);
    expect(actions({ ...change, actor: { ...customer, userId: user.id } })).toEqual([]);
    expect(actions({ ...change, actor: 'system' })).toEqual([]);
  });

  it("audits an ADMIN's order status change, not a customer's cancellation", () => {
    const after = { ...order, status: OrderStatus.CANCELLED };
    const change = { type: 'order.status_changed', before: order, after } as const;
    expect(actions({ ...change, actor: admin })).toEqual(['order.status_changed']);
    expect(actions({ ...change, actor: customer })).toEqual([]);
  });

  it('writes no entry for the unprivileged changes', () => {
    expect(actions({ type: 'order.created', order, actor: customer })).toEqual([]);
    expect(actions({ type: 'post.deleted', post: post(), actor: customer })).toEqual([]);
    expect(actions({ type: 'room.created', room: room(), actor: customer })).toEqual([]);
  });
});

function post(): Post {
  return {
    id: 'pst_1',
    authorId: customer.userId,
    title: 't',
    body: 'b',
    content: 'b',
    createdAt: '2026-01-01T00:00:00.000Z',
    updatedAt: '2026-01-01T00:00:00.000Z',
  };
}

function room(): Room {
  return { id: 'rom_1', name: 'general', createdAt: '2026-01-01T00:00:00.000Z' };
}
