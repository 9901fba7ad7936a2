import { Inject, Injectable, Logger } from '@nestjs/common';
import { OAuthClientsRepository } from '../auth/oauth/oauth-clients.repository.js';
import { isAdmin, type Caller } from '../identity/caller.js';
import { Forbidden, NotFound, PreconditionFailed, ValidationFailed } from '../common/errors.js';
import type { RestPrecondition } from '../common/rest-precondition.js';
import { parseListQuery, type ListSpec, type Page } from '../common/list-query.js';
import { mapPage, type PageValue } from '../database/connection-value.js';
import { APP_CONFIG, type AppConfig } from '../config/config.js';
import { DatabaseService } from '../database/database.service.js';
import type {
  CreateWebhookEndpointInput,
  UpdateWebhookEndpointInput,
} from './dto/webhook.inputs.js';
import type {
  WebhookDeliveryResponse,
  WebhookEndpointResponse,
  WebhookEndpointWithSecretResponse,
} from './dto/webhook.responses.js';
import { pendingDelivery, WebhookDeliveriesRepository } from './webhook-deliveries.repository.js';
import {
  WebhookEndpointsRepository,
  type EndpointChanges,
  type WebhookEndpointRow,
} from './webhook-endpoints.repository.js';
import { WebhookEventsRepository } from '../outbox/webhook-events.repository.js';
import { WebhookScheduler } from './webhook-scheduler.js';
import { newWebhookSecret } from './webhook-signer.js';
import { isId, newId } from '../common/ids.js';
import { AllowedHosts, resolveWebhookUrl, UrlRefused } from './webhook-url-guard.js';
import { toRestDelivery, toRestEndpoint } from './webhooks.mapper.js';
import { ChangeRecord } from '../changes/change-record.js';
import { activeTraceparent } from '../telemetry/tracing.js';

export const WEBHOOK_LIST_SPEC: ListSpec<never> = {
  sortFields: ['created_at'],
  defaultSort: [{ field: 'created_at', desc: false }],
  filters: {},
};

export const WEBHOOK_DELIVERY_LIST_SPEC: ListSpec<never> = {
  sortFields: ['created_at'],
  defaultSort: [{ field: 'created_at', desc: true }],
  filters: {},
};

/** How long the previous secret keeps signing after a rotation. */
const SECRET_OVERLAP_MS = 24 * 3_600_000;

/**
 * The webhook rules (ADMIN only): endpoints, their delivery log, redelivery, ping and secret
 * rotation. Endpoint changes (create, update, delete, disable) each run in one transaction.
 */
@Injectable()
export class WebhooksService {
  private readonly logger = new Logger('Webhooks');
  private readonly allowed: AllowedHosts;

  constructor(
    @Inject(APP_CONFIG) config: AppConfig,
    private readonly db: DatabaseService,
    private readonly endpoints: WebhookEndpointsRepository,
    private readonly deliveries: WebhookDeliveriesRepository,
    private readonly events: WebhookEventsRepository,
    private readonly clients: OAuthClientsRepository,
    private readonly scheduler: WebhookScheduler,
    private readonly changeRecord: ChangeRecord,
  ) {
    this.allowed = new AllowedHosts(config.webhooks.allowedHosts);
  }

  private assertAdmin(caller: Caller): void {
    if (!isAdmin(caller)) {
      throw Forbidden('Only an ADMIN may manage webhooks');
    }
  }

  private async checkUrl(url: string): Promise<void> {
    try {
      await resolveWebhookUrl(url, this.allowed);
    } catch (err) {
      if (err instanceof UrlRefused) {
        throw ValidationFailed([{ field: 'url', message: `url ${err.message}` }]);
      }
      throw err;
    }
  }

  private async requireEndpoint(id: string): Promise<WebhookEndpointRow> {
    const row = isId('webhookEndpoint', id) ? await this.endpoints.find(id) : undefined;
    if (!row) {
      throw NotFound('Webhook endpoint');
    }
    return row;
  }

  // ---- endpoints --------------------------------------------------------------------------

  async createEndpoint(
    caller: Caller,
    input: CreateWebhookEndpointInput,
  ): Promise<WebhookEndpointWithSecretResponse> {
    this.assertAdmin(caller);
    await this.checkUrl(input.url);
    if (input.oauth_client_id !== undefined && !(await this.clients.find(input.oauth_client_id))) {
      throw ValidationFailed([
        { field: 'oauth_client_id', message: 'oauth_client_id names no registered OAuth client' },
      ]);
    }
    const now = new Date().toISOString();
    const row: WebhookEndpointRow = {
      id: newId('webhookEndpoint'),
      url: input.url,
      description: input.description ?? null,
      events: JSON.stringify([...new Set(input.events)]),
      oauth_client_id: input.oauth_client_id ?? null,
      active: 1,
      disabled_reason: null,
      secret: newWebhookSecret(),
      previous_secret: null,
      previous_secret_expires_at: null,
      failing_since: null,
      created_at: now,
      updated_at: now,
    };
    const created = toRestEndpoint(row);
    await this.db.transaction(async (tx) => {
      const { manager } = tx;
      await this.endpoints.insert(manager, row);
      await this.changeRecord.record(tx, {
        type: 'webhook.created',
        endpointId: row.id,
        members: endpointChanges(undefined, created),
        actor: caller,
      });
    });
    return { ...created, secret: row.secret };
  }

  async listEndpoints(
    caller: Caller,
    rawQuery: Record<string, unknown>,
  ): Promise<Page<WebhookEndpointResponse>> {
    this.assertAdmin(caller);
    const page = await this.endpoints.page(parseListQuery(rawQuery, WEBHOOK_LIST_SPEC));
    return { data: page.rows.map(toRestEndpoint), meta: page.meta, next: page.next };
  }

  async getEndpoint(caller: Caller, id: string): Promise<WebhookEndpointResponse> {
    this.assertAdmin(caller);
    return toRestEndpoint(await this.requireEndpoint(id));
  }

  async updateEndpoint(
    caller: Caller,
    id: string,
    input: UpdateWebhookEndpointInput,
    precondition?: RestPrecondition<WebhookEndpointResponse>,
  ): Promise<WebhookEndpointResponse> {
    this.assertAdmin(caller);
    if (input.url !== undefined) {
      await this.checkUrl(input.url);
    }
    return this.db.transaction(async (tx) => {
      const { manager } = tx;
      const row = isId('webhookEndpoint', id)
        ? await this.endpoints.findLocked(manager, id)
        : undefined;
      if (!row) {
        throw NotFound('Webhook endpoint');
      }
      if (precondition && !precondition(toRestEndpoint(row))) {
        throw PreconditionFailed();
      }
      const now = new Date().toISOString();
      const changes: EndpointChanges = {
        url: input.url,
        description: input.description,
        events: input.events ? JSON.stringify([...new Set(input.events)]) : undefined,
        updated_at: now,
      };
      if (input.active === true) {
        Object.assign(changes, { active: 1, disabled_reason: null, failing_since: null });
      } else if (input.active === false) {
        Object.assign(changes, { active: 0, disabled_reason: null });
        await this.deliveries.abandonEndpoint(manager, id, 'the endpoint was disabled', now);
      }
      // null members of the row are written as they are, undefined ones are left alone
      await this.endpoints.update(manager, id, changes);
      const updated = toRestEndpoint({ ...row, ...stripUndefined(changes) });
      await this.changeRecord.record(tx, {
        type: 'webhook.updated',
        endpointId: id,
        members: endpointChanges(toRestEndpoint(row), updated),
        actor: caller,
      });
      return updated;
    });
  }

  /** Deletes the endpoint with its delivery log; idempotent callers get 404 the second time. */
  async deleteEndpoint(
    caller: Caller,
    id: string,
    precondition?: RestPrecondition<WebhookEndpointResponse>,
  ): Promise<void> {
    this.assertAdmin(caller);
    await this.db.transaction(async (tx) => {
      const { manager } = tx;
      const row = isId('webhookEndpoint', id)
        ? await this.endpoints.findLocked(manager, id)
        : undefined;
      if (!row) {
        throw NotFound('Webhook endpoint');
      }
      if (precondition && !precondition(toRestEndpoint(row))) {
        throw PreconditionFailed();
      }
      await this.deliveries.deleteOfEndpoint(manager, id);
      await this.endpoints.delete(manager, id);
      await this.changeRecord.record(tx, {
        type: 'webhook.deleted',
        endpointId: id,
        actor: caller,
      });
    });
  }

  /**
   * The service disables an endpoint (410 Gone, or failing for WEBHOOK_DISABLE_AFTER_S): it stops
   * receiving, its pending deliveries fail, and `disabled_reason` says why. No-op when already off.
   */
  async disableEndpoint(id: string, reason: string): Promise<void> {
    const disabled = await this.db.transaction(async (tx) => {
      const { manager } = tx;
      const row = await this.endpoints.findLocked(manager, id);
      if (!row || Number(row.active) === 0) {
        return false;
      }
      const now = new Date().toISOString();
      await this.endpoints.update(manager, id, {
        active: 0,
        disabled_reason: reason,
        updated_at: now,
      });
      await this.deliveries.abandonEndpoint(manager, id, 'the endpoint was disabled', now);
      await this.changeRecord.record(tx, {
        type: 'webhook.disabled',
        endpointId: id,
        reason,
        actor: 'system',
      });
      return true;
    });
    if (disabled) {
      this.logger.warn({ webhook_id: id, reason }, `webhook endpoint ${id} disabled: ${reason}`);
    }
  }

  /**
   * A new secret (returned once); the previous one also signs for 24 hours. Audited in the same
   * transaction (`webhook.secret_rotated`: until when the previous secret signs, never a secret).
   */
  async rotateSecret(caller: Caller, id: string): Promise<WebhookEndpointWithSecretResponse> {
    this.assertAdmin(caller);
    return this.db.transaction(async (tx) => {
      const { manager } = tx;
      const row = isId('webhookEndpoint', id)
        ? await this.endpoints.findLocked(manager, id)
        : undefined;
      if (!row) {
        throw NotFound('Webhook endpoint');
      }
      const now = Date.now();
      const changes = {
        secret: newWebhookSecret(),
        previous_secret: row.secret,
        previous_secret_expires_at: new Date(now + SECRET_OVERLAP_MS).toISOString(),
        updated_at: new Date(now).toISOString(),
      };
      await this.endpoints.update(manager, id, changes);
      await this.changeRecord.record(tx, {
        type: 'webhook.secret_rotated',
        endpointId: id,
        overlapEndsAt: [row.previous_secret_expires_at, changes.previous_secret_expires_at],
        actor: caller,
      });
      const updated = { ...row, ...changes };
      return {
        ...toRestEndpoint(updated),
        secret: changes.secret,
        previous_secret_expires_at: changes.previous_secret_expires_at,
      };
    });
  }

  // ---- deliveries -------------------------------------------------------------------------

  /**
   * The delivery log of an endpoint, newest first, REST and GraphQL (`webhookDeliveries`) alike:
   * the query parameters of a REST page (GraphQL's `first`/`after` are its `limit`/`cursor`).
   */
  async listDeliveries(
    caller: Caller,
    endpointId: string,
    rawQuery: Record<string, unknown>,
  ): Promise<PageValue<WebhookDeliveryResponse>> {
    this.assertAdmin(caller);
    await this.requireEndpoint(endpointId);
    const page = await this.deliveries.page(
      endpointId,
      parseListQuery(rawQuery, WEBHOOK_DELIVERY_LIST_SPEC),
    );
    return mapPage(page, toRestDelivery);
  }

  /** A new delivery of the same event (same `webhook-id`) to the same endpoint, sent now. */
  async redeliver(
    caller: Caller,
    endpointId: string,
    deliveryId: string,
  ): Promise<WebhookDeliveryResponse> {
    this.assertAdmin(caller);
    await this.requireEndpoint(endpointId);
    const original = isId('webhookDelivery', deliveryId)
      ? await this.deliveries.find(endpointId, deliveryId)
      : undefined;
    if (!original || !(await this.events.find(original.event_id))) {
      throw NotFound('Webhook delivery');
    }
    const row = pendingDelivery(
      endpointId,
      original.event_id,
      original.type,
      new Date().toISOString(),
    );
    await this.db.transaction(({ manager }) => this.deliveries.insertMany(manager, [row]));
    this.scheduler.schedule([{ id: row.id, attempts: 0, delayMs: 0, endpointId }]);
    return toRestDelivery(row);
  }

  /** A `ping` event to this endpoint alone (whatever its `events`), carrying the endpoint. */
  async ping(caller: Caller, endpointId: string): Promise<WebhookDeliveryResponse> {
    this.assertAdmin(caller);
    const endpoint = await this.requireEndpoint(endpointId);
    const now = new Date().toISOString();
    const eventId = newId('webhookEvent');
    const row = pendingDelivery(endpointId, eventId, 'ping', new Date().toISOString());
    await this.db.transaction(async ({ manager }) => {
      await this.events.insert(manager, {
        id: eventId,
        type: 'ping',
        user_id: null,
        payload: JSON.stringify(toRestEndpoint(endpoint)),
        created_at: now,
        dispatched_at: now,
        traceparent: activeTraceparent(),
      });
      await this.deliveries.insertMany(manager, [row]);
    });
    this.scheduler.schedule([{ id: row.id, attempts: 0, delayMs: 0, endpointId }]);
    return toRestDelivery(row);
  }
}

function stripUndefined<T extends object>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
}

/** Audited members of an endpoint (REST names), `{member: [old, new]}`; the secret never appears. */
function endpointChanges(
  before: WebhookEndpointResponse | undefined,
  after: WebhookEndpointResponse,
): Record<string, [unknown, unknown]> {
  const changes: Record<string, [unknown, unknown]> = {};
  for (const member of ['url', 'events', 'description', 'oauth_client_id', 'active'] as const) {
    const old = before ? before[member] : null;
    if (JSON.stringify(old) !== JSON.stringify(after[member])) {
      changes[member] = [old, after[member]];
    }
  }
  return changes;
}
