import { monotonicFactory } from 'ulid';

/** The event types an endpoint can subscribe to (`ping` is sent on request, whatever `events` says). */
export const WEBHOOK_EVENT_TYPES = [
  'user.created',
  'user.updated',
  'user.deleted',
  'order.created',
  'order.status_changed',
  'post.created',
  'post.updated',
  'post.deleted',
  'message.created',
] as const;
export type WebhookEventType = (typeof WEBHOOK_EVENT_TYPES)[number];
export type AnyWebhookEventType = WebhookEventType | 'ping';

export const DELIVERY_STATUSES = ['pending', 'succeeded', 'failed'] as const;
export type DeliveryStatus = (typeof DELIVERY_STATUSES)[number];

/** The API scope a partner's grant needs for an event type (a `:write` scope covers its `:read`). */
export function scopeForEventType(type: AnyWebhookEventType): string | undefined {
  switch (type.split('.')[0]) {
    case 'user':
      return 'users:read';
    case 'order':
      return 'orders:read';
    case 'post':
      return 'posts:read';
    case 'message':
      return 'messages:read';
    default:
      return undefined;
  }
}

const PREFIXES = { endpoint: 'whk', event: 'evt', delivery: 'dlv' } as const;
type WebhookIdKind = keyof typeof PREFIXES;
const ULID = /^[0-9A-HJKMNP-TV-Z]{26}$/;

/**
 * Monotonic within a millisecond (as src/common/ids.ts): one random draw per millisecond instead of
 * sixteen per id, which a fan-out of thousands of delivery rows a second would otherwise spend.
 */
const nextUlid = monotonicFactory();

export function newWebhookId(kind: WebhookIdKind): string {
  return `${PREFIXES[kind]}_${nextUlid()}`;
}

export function isWebhookId(kind: WebhookIdKind, id: unknown): id is string {
  return (
    typeof id === 'string' &&
    id.length === 30 &&
    id.startsWith(`${PREFIXES[kind]}_`) &&
    ULID.test(id.slice(4))
  );
}

/** TypeORM answers an UPDATE/DELETE on PostgreSQL with `[rows, count]`: the RETURNING rows on both dialects. */
export function returnedRows<T>(result: unknown): T[] {
  if (
    Array.isArray(result) &&
    result.length === 2 &&
    Array.isArray(result[0]) &&
    typeof result[1] === 'number'
  ) {
    return result[0] as T[];
  }
  return Array.isArray(result) ? (result as T[]) : [];
}
