import { Role } from '../../identity/role.js';
import type { WebhookEventRow } from '../../outbox/webhook-events.repository.js';
import { canSeeEmail } from '../../users/users.mapper.js';
import type { WebhookEndpointRow } from '../webhook-endpoints.repository.js';
import { signatureHeaders } from '../webhook-signer.js';

/**
 * `data.object` as this endpoint may read it. The outbox holds the representation an ADMIN reads
 * (what a service-wide endpoint gets); a partner endpoint reads as its OAuth client acting for the
 * event's user, so the users mapper's one visibility rule (`canSeeEmail`) decides on the email.
 */
function objectFor(
  endpoint: WebhookEndpointRow,
  event: WebhookEventRow,
  scopes: readonly string[],
): Record<string, unknown> {
  const object = JSON.parse(event.payload) as Record<string, unknown>;
  if (
    endpoint.oauth_client_id === null ||
    !event.type.startsWith('user.') ||
    !('email' in object) ||
    event.user_id === null
  ) {
    return object;
  }
  const reader = {
    userId: event.user_id,
    role: Role.USER,
    method: 'oauth' as const,
    clientId: endpoint.oauth_client_id,
    scopes: [...scopes],
  };
  return canSeeEmail({ id: String(object.id) }, reader) ? object : { ...object, email: null };
}

/** The body and headers of one attempt (signed now, with every secret still valid). */
export function deliveryRequest(
  endpoint: WebhookEndpointRow,
  event: WebhookEventRow,
  scopes: readonly string[],
  now: string,
): { body: string; headers: Record<string, string> } {
  const body = JSON.stringify({
    id: event.id,
    type: event.type,
    created_at: event.created_at,
    data: { object: objectFor(endpoint, event, scopes) },
  });
  const secrets = [endpoint.secret];
  if (
    endpoint.previous_secret &&
    endpoint.previous_secret_expires_at &&
    endpoint.previous_secret_expires_at > now
  ) {
    secrets.push(endpoint.previous_secret);
  }
  return {
    body,
    headers: {
      'content-type': 'application/json',
      'user-agent': 'Atrium-Webhooks/1',
      ...signatureHeaders(event.id, body, secrets),
    },
  };
}
