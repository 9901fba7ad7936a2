import { describe, expect, it } from 'vitest';
import type { TxContext } from '../database/database.service.js';
import type { Caller } from '../identity/caller.js';
import { Role } from '../identity/role.js';
import type { Room } from '../domain/message.js';
import type { Post } from '../domain/post.js';
import { ChangeRecord } from './change-record.js';

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

const customer: Caller = { userId: 'usr_customer', role: Role.USER, method: 'jwt' };

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
