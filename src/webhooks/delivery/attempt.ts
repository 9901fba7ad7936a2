import type { OAuthArtifactsRepository } from '../../identity/oauth-artifacts.repository.js';
import type { WebhookEventRow } from '../../outbox/webhook-events.repository.js';
import type {
  AttemptResult,
  WebhookDeliveriesRepository,
  WebhookDeliveryRow,
} from '../webhook-deliveries.repository.js';
import type { WebhookEndpointRow } from '../webhook-endpoints.repository.js';
import type { DeliveryOutcome, WebhookMetrics } from '../webhook-metrics.js';
import type { WebhookSender } from '../webhook-sender.js';
import { resolveWebhookUrl, UrlRefused, type AllowedHosts } from '../webhook-url-guard.js';
import type { OutcomeWriter } from './outcome-writer.js';
import { partnerScopes } from './partner-scopes.js';
import { deliveryRequest } from './payload.js';
import { injectTraceContext, inStoredTrace, markSpanFailed } from '../../telemetry/tracing.js';

/** A claimed attempt with what it needs: its endpoint and event (null when gone). */
export interface ClaimedAttempt {
  row: WebhookDeliveryRow;
  endpoint: WebhookEndpointRow | null;
  event: WebhookEventRow | null;
}

/** How a receiver's answer (or its absence) counts. */
function outcomeOf(sent: AttemptResult & { timedOut: boolean }): DeliveryOutcome {
  const code = sent.statusCode;
  if (code === null) {
    return sent.timedOut ? 'timeout' : 'error';
  }
  if (code >= 200 && code < 300) {
    return 'succeeded';
  }
  return code === 410 ? 'gone' : 'failed';
}

/**
 * One attempt of a claimed row: checks that it may still be made (endpoint there and active, event
 * kept, the partner's grant still covering it), sends it, and hands the outcome to the outcome
 * writer, which owns it from then on (it resolves as soon as the receiver answered).
 */
export class DeliveryAttempt {
  constructor(
    private readonly deliveries: WebhookDeliveriesRepository,
    private readonly artifacts: OAuthArtifactsRepository,
    private readonly sender: WebhookSender,
    private readonly allowed: AllowedHosts,
    private readonly metrics: WebhookMetrics,
    private readonly writer: OutcomeWriter,
  ) {}

  async run({ row, endpoint, event }: ClaimedAttempt): Promise<void> {
    const now = () => new Date().toISOString();
    if (!endpoint) {
      await this.deliveries.abandon(row.id, 'the endpoint was deleted', now());
      return;
    }
    if (!endpoint.active || Number(endpoint.active) === 0) {
      await this.deliveries.abandon(row.id, 'the endpoint is disabled', now());
      return;
    }
    if (!event) {
      await this.deliveries.abandon(row.id, 'the event has expired', now());
      return;
    }
    const scopes = await partnerScopes(this.artifacts, endpoint, event);
    if (scopes === null) {
      await this.deliveries.abandon(
        row.id,
        "the user's grant to the endpoint's OAuth client no longer covers this event",
        now(),
      );
      return;
    }
    const { body, headers } = deliveryRequest(endpoint, event, scopes, now());
    // a client span in the trace of the change that produced the event, however late this attempt
    // is; the receiver gets its `traceparent` (docs/webhooks.md)
    const attributes = {
      'http.request.method': 'POST',
      'atrium.webhook.endpoint_id': endpoint.id,
      'atrium.webhook.delivery_id': row.id,
      'atrium.webhook.event_type': event.type,
      'atrium.webhook.attempt': Number(row.attempts) + 1,
    };
    const [result, outcome] = await inStoredTrace(
      `POST webhook ${event.type}`,
      'client',
      [event.traceparent],
      attributes,
      async (span): Promise<[AttemptResult, DeliveryOutcome]> => {
        try {
          const target = await resolveWebhookUrl(endpoint.url, this.allowed);
          injectTraceContext(headers);
          span?.setAttribute('url.full', target.url.href);
          const sent = await this.sender.send(target, headers, body);
          if (sent.statusCode !== null) {
            span?.setAttribute('http.response.status_code', sent.statusCode);
          }
          const attempt = outcomeOf(sent);
          if (attempt !== 'succeeded') {
            markSpanFailed(span, sent.error ?? `HTTP ${sent.statusCode}`);
          }
          return [
            { statusCode: sent.statusCode, durationMs: sent.durationMs, error: sent.error },
            attempt,
          ];
        } catch (err) {
          if (!(err instanceof UrlRefused)) {
            throw err;
          }
          markSpanFailed(span, 'refused');
          return [
            { statusCode: null, durationMs: 0, error: `refused: the URL ${err.message}` },
            'refused',
          ];
        }
      },
    );
    this.metrics.record(outcome, result.durationMs / 1000);
    this.writer.record({ row, endpoint, result, outcome, at: now() });
  }
}
