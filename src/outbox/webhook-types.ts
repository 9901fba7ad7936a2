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
