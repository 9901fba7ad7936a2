import type { OAuthArtifactsRepository } from '../../identity/oauth-artifacts.repository.js';
import type { DatabaseService } from '../../database/database.service.js';
import type {
  WebhookEventRow,
  WebhookEventsRepository,
} from '../../outbox/webhook-events.repository.js';
import { inStoredTrace } from '../../telemetry/tracing.js';
import {
  pendingDelivery,
  type WebhookDeliveriesRepository,
  type WebhookDeliveryRow,
} from '../webhook-deliveries.repository.js';
import type { WebhookEndpointsRepository } from '../webhook-endpoints.repository.js';
import type { ScheduledAttempt } from '../webhook-scheduler.js';
import { partnerScopes } from './partner-scopes.js';

export const FAN_OUT_BATCH = 100;

/** Turns committed outbox events into one delivery row per matching endpoint. */
export class WebhookFanOut {
  constructor(
    private readonly db: DatabaseService,
    private readonly events: WebhookEventsRepository,
    private readonly endpoints: WebhookEndpointsRepository,
    private readonly deliveries: WebhookDeliveriesRepository,
    private readonly artifacts: OAuthArtifactsRepository,
    private readonly enqueue: (attempts: ScheduledAttempt[]) => void,
  ) {}

  /** One batch of undispatched events; returns how many events it looked at. */
  async run(): Promise<number> {
    const events = await this.events.undispatched(FAN_OUT_BATCH);
    if (events.length === 0) {
      return 0;
    }
    // one span per batch: in the trace of the change when the batch holds one, else linked to each
    return inStoredTrace(
      'webhook fan-out',
      'internal',
      events.map((e) => e.traceparent),
      { 'atrium.webhook.events': events.length },
      () => this.fanOutBatch(events),
    );
  }

  private async fanOutBatch(events: WebhookEventRow[]): Promise<number> {
    const endpoints = (await this.endpoints.active()).map((endpoint) => ({
      endpoint,
      types: new Set(JSON.parse(endpoint.events) as string[]),
    }));
    const rows: WebhookDeliveryRow[] = [];
    const rowsOf = new Map<string, number>();
    const now = new Date().toISOString();
    for (const event of events) {
      let count = 0;
      for (const { endpoint, types } of endpoints) {
        if (
          // an endpoint receives the changes made after it was registered
          endpoint.created_at <= event.created_at &&
          types.has(event.type) &&
          (await partnerScopes(this.artifacts, endpoint, event)) !== null
        ) {
          count += 1;
          rows.push(pendingDelivery(endpoint.id, event.id, event.type, now));
        }
      }
      rowsOf.set(event.id, count);
    }
    // one transaction (one commit) for the whole batch; each event goes to whoever marks it first
    const scheduled = await this.db.transaction(async ({ manager }) => {
      const won = await this.events.markManyDispatched(
        manager,
        events.map((e) => e.id),
        now,
      );
      await this.events.deleteMany(
        manager,
        [...won].filter((id) => rowsOf.get(id) === 0),
      );
      const mine = rows.filter((r) => won.has(r.event_id));
      await this.deliveries.insertMany(manager, mine);
      return mine.map(
        (r): ScheduledAttempt => ({ id: r.id, attempts: 0, delayMs: 0, endpointId: r.endpoint_id }),
      );
    });
    this.enqueue(scheduled);
    return events.length;
  }
}
