import { Role } from '../identity/role.js';
import { OrderStatus } from '../domain/order.js';

/**
 * The order state machine: pending -> paid -> shipped -> delivered, and pending|paid -> cancelled.
 * delivered and cancelled are final. Staying in the same status is not a transition.
 */
const NEXT: Record<OrderStatus, readonly OrderStatus[]> = {
  [OrderStatus.PENDING]: [OrderStatus.PAID, OrderStatus.CANCELLED],
  [OrderStatus.PAID]: [OrderStatus.SHIPPED, OrderStatus.CANCELLED],
  [OrderStatus.SHIPPED]: [OrderStatus.DELIVERED],
  [OrderStatus.DELIVERED]: [],
  [OrderStatus.CANCELLED]: [],
};

export function isValidTransition(from: OrderStatus, to: OrderStatus): boolean {
  return NEXT[from].includes(to);
}

export function nextStatuses(from: OrderStatus): readonly OrderStatus[] {
  return NEXT[from];
}

/**
 * Outcome of a status change request, decided in this order: an invalid transition is 409 for
 * everyone ("conflict": the order's state forbids it); a valid one the caller may not make is 403.
 * ADMIN may make any valid transition; USER may only cancel their own pending order (ownership is
 * checked by the service before this); GUEST nothing.
 */
export type TransitionDecision = 'allowed' | 'invalid' | 'forbidden';

export function decideTransition(
  role: Role,
  from: OrderStatus,
  to: OrderStatus,
): TransitionDecision {
  if (!isValidTransition(from, to)) {
    return 'invalid';
  }
  switch (role) {
    case Role.ADMIN:
      return 'allowed';
    case Role.USER:
      return from === OrderStatus.PENDING && to === OrderStatus.CANCELLED ? 'allowed' : 'forbidden';
    case Role.GUEST:
      return 'forbidden';
  }
}
