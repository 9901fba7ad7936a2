import { describe, expect, it } from 'vitest';
import { Role } from '../identity/role.js';
import { ORDER_STATUSES, OrderStatus } from '../domain/order.js';
import { decideTransition, isValidTransition, nextStatuses } from './order-status.js';

const { PENDING, PAID, SHIPPED, DELIVERED, CANCELLED } = OrderStatus;

/** Every valid edge of docs/contract.md section 4; everything else must be refused. */
const VALID: [OrderStatus, OrderStatus][] = [
  [PENDING, PAID],
  [PAID, SHIPPED],
  [SHIPPED, DELIVERED],
  [PENDING, CANCELLED],
  [PAID, CANCELLED],
];

const isListed = (from: OrderStatus, to: OrderStatus) =>
  VALID.some(([f, t]) => f === from && t === to);

describe('order state machine', () => {
  for (const from of ORDER_STATUSES) {
    for (const to of ORDER_STATUSES) {
      const valid = isListed(from, to);
      it(`${from} -> ${to} is ${valid ? 'valid' : 'invalid'}`, () => {
        expect(isValidTransition(from, to)).toBe(valid);
      });
    }
  }

  it('has final states delivered and cancelled', () => {
    expect(nextStatuses(DELIVERED)).toEqual([]);
    expect(nextStatuses(CANCELLED)).toEqual([]);
  });
});

describe('who may make a transition', () => {
  it('lets an ADMIN make every valid transition and no invalid one', () => {
    for (const from of ORDER_STATUSES) {
      for (const to of ORDER_STATUSES) {
        expect(decideTransition(Role.ADMIN, from, to)).toBe(
          isListed(from, to) ? 'allowed' : 'invalid',
        );
      }
    }
  });

  it('lets a USER cancel a pending order only', () => {
    expect(decideTransition(Role.USER, PENDING, CANCELLED)).toBe('allowed');
    expect(decideTransition(Role.USER, PAID, CANCELLED)).toBe('forbidden');
    expect(decideTransition(Role.USER, PENDING, PAID)).toBe('forbidden');
    expect(decideTransition(Role.USER, PAID, SHIPPED)).toBe('forbidden');
    expect(decideTransition(Role.USER, SHIPPED, DELIVERED)).toBe('forbidden');
  });

  it('reports an invalid transition as invalid whoever asks (409 before 403)', () => {
    expect(decideTransition(Role.USER, DELIVERED, CANCELLED)).toBe('invalid');
    expect(decideTransition(Role.GUEST, SHIPPED, PENDING)).toBe('invalid');
    expect(decideTransition(Role.USER, PENDING, PENDING)).toBe('invalid');
  });

  it('lets a GUEST make no transition', () => {
    for (const [from, to] of VALID) {
      expect(decideTransition(Role.GUEST, from, to)).toBe('forbidden');
    }
  });
});
