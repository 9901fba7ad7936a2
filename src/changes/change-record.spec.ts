import { describe, expect, it } from 'vitest';
import type { TxContext } from '../database/database.service.js';
import type { Caller } from '../identity/caller.js';
import { Role } from '../identity/role.js';
import { OrderStatus, type Order } from '../orders/order.js';
import type { Room } from '../messages/message.js';
import type { Post } from '../posts/post.js';
import type { User } from '../users/user.js';
import { ChangeRecord } from './change-record.js';
import type { Change } from './change.js';
import { auditEntries } from './subscribers/audit-entries.js';

/** A transaction as the change record sees it: its after-commit queue runs only on `commit()`. */
function fakeTx(): { tx: TxContext; commit: () => Promise<void> } {
  const after: (() => void | Promise<void>)[] = [];
  const tx = {
    manager: undefined,
    afterCommit: (fn: () => void | Promise<void>) => after.push(fn),
    beforeCommit: () => undefined,
  } as unknown as TxContext;
  return {
    tx,
    commit: async () => {
      for (const fn of after) {
        await fn();
      }
    },
  };
}

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

describe('ChangeRecord', () => {
  it('runs in-transaction subscribers at record time, in order, and after-commit ones only on commit', async () => {
    const record = new ChangeRecord();
    const seen: string[] = [];
    record.subscribe({ name: 'a', inTransaction: (_tx, c) => void seen.push(`a:${c.type}`) });
    record.subscribe({
      name: 'b',
      inTransaction: (_tx, c) => void seen.push(`b:${c.type}`),
      afterCommit: (c) => void seen.push(`after:${c.type}`),
    });
    const { tx, commit } = fakeTx();
    await record.record(tx, { type: 'post.deleted', post: post(), actor: customer });
    await record.record(tx, { type: 'room.created', room: room(), actor: customer });
    expect(seen).toEqual(['a:post.deleted', 'b:post.deleted', 'a:room.created', 'b:room.created']);
    expect(record.changesOf(tx).map((c) => c.type)).toEqual(['post.deleted', 'room.created']);
    await commit();
    expect(seen.slice(4)).toEqual(['after:post.deleted', 'after:room.created']);
  });

  it('never runs after-commit subscribers of a transaction that does not commit', async () => {
    const record = new ChangeRecord();
    let after = 0;
    record.subscribe({ name: 'after', afterCommit: () => void (after += 1) });
    const { tx } = fakeTx();
    await record.record(tx, { type: 'room.created', room: room(), actor: customer });
    expect(after).toBe(0);
  });

  it('fails the record when an in-transaction subscriber throws, and stops there', async () => {
    const record = new ChangeRecord();
    const seen: string[] = [];
    record.subscribe({
      name: 'failing',
      inTransaction: () => {
        throw new Error('refused');
      },
    });
    record.subscribe({ name: 'later', inTransaction: () => void seen.push('later') });
    await expect(
      record.record(fakeTx().tx, { type: 'room.created', room: room(), actor: customer }),
    ).rejects.toThrow('refused');
    expect(seen).toEqual([]);
  });

  it('an unsubscribed subscriber sees nothing more', async () => {
    const record = new ChangeRecord();
    let n = 0;
    const stop = record.subscribe({ name: 'n', inTransaction: () => void (n += 1) });
    await record.record(fakeTx().tx, { type: 'room.created', room: room(), actor: customer });
    stop();
    await record.record(fakeTx().tx, { type: 'room.created', room: room(), actor: customer });
    expect(n).toBe(1);
  });
});

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
