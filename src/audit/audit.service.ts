import {
  Inject,
  Injectable,
  Logger,
  type OnModuleDestroy,
  type OnModuleInit,
} from '@nestjs/common';
import { isAdmin, type Caller, type MaybeCaller } from '../identity/caller.js';
import { instantParam } from '../common/admin-filters.js';
import { BadRequest, Forbidden, Unauthorized, type ErrorDetail } from '../common/errors.js';
import { newId, nowIso } from '../common/ids.js';
import {
  parseListQuery,
  type ListQuery,
  type ListSpec,
  type PageRequest,
} from '../common/list-query.js';
import { APP_CONFIG, type AppConfig } from '../config/config.js';
import { countInInterval, addCalendar } from '../database/calendar-counts.js';
import { CountersRepository, CountKeys } from '../database/counters.repository.js';
import { DatabaseService, type TxContext } from '../database/database.service.js';
import { windowAsQuery } from '../database/page-reader.js';
import { mapPage, type PageValue } from '../database/connection-value.js';
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

/**
 * The actions a partner app (an OAuth access token) reads in the log: changes of users, orders and
 * ADMINs. Entries about API keys, OAuth clients and grants, and webhooks stay first-party, as
 * those resources do (docs/oauth.md "Rules"); an action added later is hidden from apps until it is
 * listed here.
 */
const APP_VISIBLE_ACTIONS: readonly AuditAction[] = AUDIT_ACTIONS.filter((a) =>
  /^(user|order|admin)\./.test(a),
);

/** What a caller reads of each entry: partner apps see no address, and emails only with `email`. */
interface AuditView {
  /** The actions it may read; undefined: all. */
  actions?: readonly AuditAction[];
  emails: boolean;
  ip: boolean;
}

function viewOf(caller: Caller): AuditView {
  if (caller.method !== 'oauth') {
    return { emails: true, ip: true };
  }
  return {
    actions: APP_VISIBLE_ACTIONS,
    emails: caller.scopes?.includes('email') ?? false,
    ip: false,
  };
}

/** Members of `changes` that hold an email address. */
const EMAIL_MEMBERS = /email/i;

/** An entry as `view` shows it: no `ip` for apps, no email members without the `email` scope. */
function shown(event: AuditEvent, view: AuditView): AuditEvent {
  if (view.emails && view.ip) {
    return event;
  }
  const changes: AuditChanges = {};
  for (const [member, pair] of Object.entries(event.changes)) {
    if (view.emails || !EMAIL_MEMBERS.test(member)) {
      changes[member] = pair;
    }
  }
  return { ...event, changes, ip: view.ip ? event.ip : null };
}

/** Who made a change: a caller (REST or GraphQL), or the server itself (`system`). */
type AuditActor = Caller | 'system';

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
 * The audit log (docs/admin.md "Audit log"). `record` is called by the change record's audit
 * subscriber (src/change-subscribers/, docs/data-integrity.md "The change record") with the transaction of the
 * change it records, so the entry commits or rolls back with it; the request id and address come
 * from the caller's HTTP request (`Caller.request`).
 */
@Injectable()
export class AuditService implements OnModuleInit, OnModuleDestroy {
  private readonly logger = new Logger('AuditService');
  private timer?: NodeJS.Timeout;

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly db: DatabaseService,
    private readonly events: AuditEventsRepository,
    private readonly counters: CountersRepository,
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

  /** Appends one entry in the transaction `tx` (and counts it in the log's counters). */
  async record(tx: TxContext, entry: AuditEntry): Promise<AuditEvent> {
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
    await this.events.insert(tx.manager, event);
    this.counters.add(
      tx,
      auditCountDeltas(
        { action: event.action, actorId: event.actor.id, targetId: event.target.id, at: event.at },
        1,
      ),
    );
    return event;
  }

  /**
   * The audit log, newest first, REST (`GET /api/v1/audit-events`) and GraphQL (`auditEvents`)
   * alike: ADMIN only. A REST request carries its query parameters (filters, page or cursor); a
   * GraphQL window its `first`/`after` with the checked `filter` beside it (the cursors are the REST
   * ones). A partner app's token reads only APP_VISIBLE_ACTIONS (its total counts only those),
   * without `ip`, and emails in `changes` only with the `email` scope (docs/admin.md "Audit log").
   */
  async page(
    caller: MaybeCaller,
    request: PageRequest,
    filter: AuditEventFilter = {},
  ): Promise<PageValue<AuditEvent>> {
    this.requireAdmin(caller);
    const { query, checked } =
      'rest' in request
        ? this.parse(request.rest)
        : { query: windowAsQuery(request.window, request.sort), checked: filter };
    const view = viewOf(caller);
    const scoped: AuditEventFilter = view.actions ? { ...checked, actions: view.actions } : checked;
    const page = await this.events.page(scoped, query, this.total(scoped));
    return mapPage(page, (row) => shown(auditEventFromRow(row), view));
  }

  /** The query parameters of `GET /api/v1/audit-events`: the page and the checked filter. */
  private parse(rawQuery: Record<string, unknown>): {
    query: ListQuery;
    checked: AuditEventFilter;
  } {
    const query = parseListQuery(rawQuery, AUDIT_LIST_SPEC);
    const details: ErrorDetail[] = [];
    const checked: AuditEventFilter = {
      action: query.filters.action,
      actorId: idParam(rawQuery, 'actor_id', details),
      targetId: idParam(rawQuery, 'target_id', details),
      since: instantParam(rawQuery, 'since', details),
      until: instantParam(rawQuery, 'until', details),
    };
    if (details.length > 0) {
      throw BadRequest('Invalid query parameters', details);
    }
    return { query, checked };
  }

  /**
   * The exact number of entries a filter matches: a counter when one of `action`, `actor_id` and
   * `target_id` filters, or none; a sum of calendar counters when `since`/`until` filter (with
   * `action` or alone); else a COUNT over the filter's index range (an actor's or a target's
   * entries, narrowed).
   */
  private total(filter: AuditEventFilter): Promise<number> {
    const { action, actions } = filter;
    if (actions !== undefined) {
      if (action !== undefined) {
        // one action: its own counters, or none at all when it is not among those readable
        return actions.includes(action)
          ? this.total({ ...filter, actions: undefined })
          : Promise.resolve(0);
      }
      return this.totalOfActions(filter, actions);
    }
    return this.totalOfFilter(filter);
  }

  /**
   * The entries of any of `actions` a filter without `action` matches: the sum of the actions'
   * counters (calendar counters with `since`/`until`), or a COUNT over the filter's index range with
   * an actor or a target.
   */
  private totalOfActions(filter: AuditEventFilter, actions: readonly string[]): Promise<number> {
    const { actorId, targetId, since, until } = filter;
    if (actorId !== undefined || targetId !== undefined) {
      return this.events.count(filter);
    }
    if (since === undefined && until === undefined) {
      return this.counters
        .getMany(actions.map((a) => CountKeys.auditByAction(a)))
        .then((counts) => [...counts.values()].reduce((n, c) => n + c, 0));
    }
    // a calendar key stands for the sum of that key over the actions
    const ALL = '*';
    const expand = (key: string) =>
      key === ALL
        ? actions.map((a) => CountKeys.auditByAction(a))
        : actions.map((a) => CountKeys.auditAt(a)(key));
    return countInInterval(
      {
        all: ALL,
        key: (prefix) => prefix,
        counters: async (keys) => {
          const counts = await this.counters.getMany([...new Set(keys.flatMap(expand))]);
          return new Map(
            keys.map((k) => [k, expand(k).reduce((n, e) => n + (counts.get(e) ?? 0), 0)]),
          );
        },
        count: (after, upTo) => this.events.count({ actions, since: after, until: upTo }),
      },
      since,
      until,
    );
  }

  private totalOfFilter(filter: AuditEventFilter): Promise<number> {
    const { action, actorId, targetId, since, until } = filter;
    const ids = [actorId, targetId].filter((v) => v !== undefined).length;
    const dated = since !== undefined || until !== undefined;
    if (!dated && ids + (action !== undefined ? 1 : 0) <= 1) {
      const key =
        actorId !== undefined
          ? CountKeys.auditByActor(actorId)
          : targetId !== undefined
            ? CountKeys.auditByTarget(targetId)
            : action !== undefined
              ? CountKeys.auditByAction(action)
              : CountKeys.audit();
      return this.counters.get(key);
    }
    if (dated && ids === 0) {
      return countInInterval(
        {
          all: action !== undefined ? CountKeys.auditByAction(action) : CountKeys.audit(),
          key: CountKeys.auditAt(action),
          counters: (keys) => this.counters.getMany(keys),
          count: (after, upTo) => this.events.count({ action, since: after, until: upTo }),
        },
        since,
        until,
      );
    }
    return this.events.count(filter);
  }

  requireAdmin(caller: MaybeCaller): asserts caller is Caller {
    if (!caller) {
      throw Unauthorized();
    }
    if (!isAdmin(caller)) {
      throw Forbidden('Only administrators can read the audit log');
    }
  }

  /** Deletes the entries older than AUDIT_RETENTION_DAYS, uncounting them; the number deleted. */
  purge(now = Date.now()): Promise<number> {
    const before = new Date(now - this.config.auditRetentionDays * 86_400_000).toISOString();
    return this.db.transaction(async (tx) => {
      const groups = await this.events.groupsBefore(tx.manager, before);
      const deltas: Record<string, number> = {};
      let n = 0;
      for (const g of groups) {
        auditCountDeltas(g, -g.n, deltas);
        n += g.n;
      }
      this.counters.add(tx, deltas);
      await this.events.deleteBefore(tx.manager, before);
      return n;
    });
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

/**
 * The counters `n` entries move: all, by action, actor and target, and the calendar units of `at`
 * (all and by action). `at` may be a minute (the first 16 characters) for grouped entries.
 */
function auditCountDeltas(
  entry: { action: string; actorId: string | null; targetId: string; at: string },
  n: number,
  into: Record<string, number> = {},
): Record<string, number> {
  const add = (key: string) => (into[key] = (into[key] ?? 0) + n);
  add(CountKeys.audit());
  add(CountKeys.auditByAction(entry.action));
  if (entry.actorId !== null) {
    add(CountKeys.auditByActor(entry.actorId));
  }
  add(CountKeys.auditByTarget(entry.targetId));
  addCalendar(into, CountKeys.auditAt(), entry.at, n);
  addCalendar(into, CountKeys.auditAt(entry.action), entry.at, n);
  return into;
}
