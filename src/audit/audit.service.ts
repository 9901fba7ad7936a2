import {
  Inject,
  Injectable,
  Logger,
  type OnModuleDestroy,
  type OnModuleInit,
} from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { isAdmin, type Caller, type MaybeCaller } from '../identity/caller.js';
import { instantParam } from '../common/admin-filters.js';
import { BadRequest, Forbidden, Unauthorized, type ErrorDetail } from '../common/errors.js';
import { newId, nowIso } from '../common/ids.js';
import { parseListQuery, type ListSpec, type Page } from '../common/list-query.js';
import { APP_CONFIG, type AppConfig } from '../config/config.js';
import { DatabaseService } from '../database/database.service.js';
import {
  AUDIT_ACTIONS,
  type ActorType,
  type AuditAction,
  type AuditChanges,
  type AuditEvent,
} from './audit-event.js';
import {
  auditEventFromRow,
  AuditEventsRepository,
  type AuditEventFilter,
} from './audit-events.repository.js';

export const AUDIT_LIST_SPEC: ListSpec<'action'> = {
  sortFields: ['at'],
  defaultSort: [{ field: 'at', desc: true }],
  filters: { action: AUDIT_ACTIONS },
  parameters: {
    actor_id: {
      description: 'Only entries by this actor (a user, API key or OAuth client id).',
      schema: { type: 'string', maxLength: 64 },
    },
    target_id: {
      description: 'Only entries about this target (a user, API key, OAuth client or order id).',
      schema: { type: 'string', maxLength: 64 },
    },
    since: {
      description: 'Only entries strictly later than this instant (RFC 3339).',
      schema: { type: 'string', format: 'date-time' },
    },
    until: {
      description: 'Only entries at or before this instant (RFC 3339, inclusive).',
      schema: { type: 'string', format: 'date-time' },
    },
  },
};

/** Who made a change: a caller (REST or GraphQL), or the server itself (`system`). */
export type AuditActor = Caller | 'system';

export interface AuditEntry {
  actor: AuditActor;
  action: AuditAction;
  target: { type: string; id: string };
  /** `{member: [old, new]}`, REST names and values; never a secret or a hash. */
  changes?: AuditChanges;
  /** The user the change was made for, when not the OAuth token's user (a grant's user). */
  onBehalfOf?: string;
}

/** How often entries past the retention are purged. */
const PURGE_INTERVAL_MS = 60 * 60 * 1000;

/** Members never written to `changes`, whoever passes them (defence in depth). */
const SECRET_MEMBERS = /(password|secret|hash|token|^key$)/i;

/**
 * The audit log (docs/admin.md "Audit log"). `record` is called by the service making a privileged
 * change, with that change's transaction manager, so the entry commits or rolls back with it; the
 * request id and address come from the caller's HTTP request (`Caller.request`).
 */
@Injectable()
export class AuditService implements OnModuleInit, OnModuleDestroy {
  private readonly logger = new Logger('AuditService');
  private timer?: NodeJS.Timeout;

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly db: DatabaseService,
    private readonly events: AuditEventsRepository,
  ) {}

  onModuleInit(): void {
    this.timer = setInterval(() => void this.purgeQuietly(), PURGE_INTERVAL_MS);
    this.timer.unref();
    setImmediate(() => void this.purgeQuietly());
  }

  onModuleDestroy(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }

  /** Appends one entry in the transaction of `manager`. */
  async record(manager: EntityManager, entry: AuditEntry): Promise<AuditEvent> {
    const request = entry.actor === 'system' ? undefined : entry.actor.request;
    const changes: AuditChanges = {};
    for (const [member, pair] of Object.entries(entry.changes ?? {})) {
      if (!SECRET_MEMBERS.test(member)) {
        changes[member] = pair;
      }
    }
    const event: AuditEvent = {
      id: newId('auditEvent'),
      at: nowIso(),
      actor: actorOf(entry.actor),
      on_behalf_of:
        entry.onBehalfOf ??
        (entry.actor !== 'system' && entry.actor.method === 'oauth' ? entry.actor.userId : null),
      action: entry.action,
      target: entry.target,
      changes,
      request_id: request?.requestId ?? null,
      ip: request?.ip ?? null,
    };
    await this.events.insert(manager, event);
    return event;
  }

  /** Appends one entry in a transaction of its own (a refusal, whose change rolled back). */
  recordAlone(entry: AuditEntry): Promise<AuditEvent> {
    return this.db.transaction(({ manager }) => this.record(manager, entry));
  }

  /** GET /api/v1/audit-events: ADMIN only, newest first. */
  async list(caller: MaybeCaller, rawQuery: Record<string, unknown>): Promise<Page<AuditEvent>> {
    this.requireAdmin(caller);
    const query = parseListQuery(rawQuery, AUDIT_LIST_SPEC);
    const details: ErrorDetail[] = [];
    const filter: AuditEventFilter = {
      action: query.filters.action,
      actorId: idParam(rawQuery, 'actor_id', details),
      targetId: idParam(rawQuery, 'target_id', details),
      since: instantParam(rawQuery, 'since', details),
      until: instantParam(rawQuery, 'until', details),
    };
    if (details.length > 0) {
      throw BadRequest('Invalid query parameters', details);
    }
    return this.page(filter, query);
  }

  /** A page for a checked filter (REST and GraphQL). */
  async page(
    filter: AuditEventFilter,
    query: ReturnType<typeof parseListQuery>,
  ): Promise<Page<AuditEvent>> {
    const { rows, meta, next } = await this.events.page(filter, query);
    return { data: rows.map(auditEventFromRow), meta, next };
  }

  requireAdmin(caller: MaybeCaller): asserts caller is Caller {
    if (!caller) {
      throw Unauthorized();
    }
    if (!isAdmin(caller)) {
      throw Forbidden('Only administrators can read the audit log');
    }
  }

  /** Deletes the entries older than AUDIT_RETENTION_DAYS; the number deleted. */
  purge(now = Date.now()): Promise<number> {
    const before = new Date(now - this.config.auditRetentionDays * 86_400_000).toISOString();
    return this.events.purgeBefore(before);
  }

  private async purgeQuietly(): Promise<void> {
    try {
      const n = await this.purge();
      if (n > 0) {
        this.logger.log(
          `purged ${n} audit entries older than ${this.config.auditRetentionDays} days`,
        );
      }
    } catch (err) {
      this.logger.warn(`audit purge failed: ${String(err)}`);
    }
  }
}

function actorOf(actor: AuditActor): { type: ActorType; id: string | null } {
  if (actor === 'system') {
    return { type: 'system', id: null };
  }
  if (actor.method === 'api_key' && actor.keyId) {
    return { type: 'api_key', id: actor.keyId };
  }
  if (actor.method === 'oauth' && actor.clientId) {
    return { type: 'oauth_client', id: actor.clientId };
  }
  return { type: 'user', id: actor.userId };
}

function idParam(
  query: Record<string, unknown>,
  name: string,
  details: ErrorDetail[],
): string | undefined {
  const raw = query[name];
  if (raw === undefined) {
    return undefined;
  }
  if (typeof raw !== 'string' || !/^[A-Za-z0-9_-]{1,64}$/.test(raw)) {
    details.push({ field: name, message: `${name} must be an id` });
    return undefined;
  }
  return raw;
}
