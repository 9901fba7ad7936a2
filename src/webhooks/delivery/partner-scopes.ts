import { scopesOf } from '../../auth/oauth/oauth-grants.service.js';
import type { OAuthArtifactsRepository } from '../../identity/oauth-artifacts.repository.js';
import { missingScopes } from '../../identity/scopes.js';
import type { WebhookEventRow } from '../../outbox/webhook-events.repository.js';
import { scopeForEventType } from '../../outbox/webhook-types.js';
import type { WebhookEndpointRow } from '../webhook-endpoints.repository.js';

/**
 * The scopes a partner endpoint's client holds from the event's user (`[]` for a service-wide
 * endpoint), or null when it may not receive the event: no live grant of that user to that client,
 * or none covering the event's type. Asked at fan-out and again before every attempt (a revoked
 * grant stops the deliveries not yet made).
 */
export async function partnerScopes(
  artifacts: OAuthArtifactsRepository,
  endpoint: WebhookEndpointRow,
  event: WebhookEventRow,
): Promise<string[] | null> {
  if (endpoint.oauth_client_id === null || event.type === 'ping') {
    return [];
  }
  if (event.user_id === null) {
    return null;
  }
  const grants = await artifacts.grantsOf(event.user_id, endpoint.oauth_client_id);
  const scopes = [...new Set(grants.flatMap(scopesOf))];
  const needed = scopeForEventType(event.type);
  if (grants.length === 0 || (needed && missingScopes(scopes, [needed]).length > 0)) {
    return null;
  }
  return scopes;
}
