import type { WebhookEndpointResponse, WebhookDeliveryResponse } from './dto/webhook.responses.js';
import type { WebhookDeliveryRow } from './webhook-deliveries.repository.js';
import type { WebhookEndpointRow } from './webhook-endpoints.repository.js';

export function toRestEndpoint(row: WebhookEndpointRow): WebhookEndpointResponse {
  return {
    id: row.id,
    url: row.url,
    description: row.description,
    events: JSON.parse(row.events) as string[],
    oauth_client_id: row.oauth_client_id,
    active: Number(row.active) === 1,
    disabled_reason: row.disabled_reason,
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
}

export function toRestDelivery(row: WebhookDeliveryRow): WebhookDeliveryResponse {
  const num = (v: number | string | null) => (v === null ? null : Number(v));
  return {
    id: row.id,
    event_id: row.event_id,
    type: row.type,
    status: row.status,
    attempts: Number(row.attempts),
    last_status_code: num(row.last_status_code),
    last_duration_ms: num(row.last_duration_ms),
    last_error: row.last_error,
    next_attempt_at: row.status === 'pending' ? row.next_attempt_at : null,
    created_at: row.created_at,
  };
}
