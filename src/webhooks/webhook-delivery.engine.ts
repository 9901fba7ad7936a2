import {
  Inject,
  Injectable,
  Logger,
  Optional,
  type OnApplicationBootstrap,
  type OnModuleDestroy,
} from '@nestjs/common';
import type { Queue } from 'bullmq';
import { scopesOf } from '../auth/oauth/oauth-grants.service.js';
import { OAuthArtifactsRepository } from '../identity/oauth-artifacts.repository.js';
import { missingScopes } from '../identity/scopes.js';
import { APP_CONFIG, type AppConfig } from '../config/config.js';
import { DatabaseService } from '../database/database.service.js';
import {
  pendingDelivery,
  WebhookDeliveriesRepository,
  type AttemptResult,
  type WebhookDeliveryRow,
} from './webhook-deliveries.repository.js';
import {
  WebhookEndpointsRepository,
  type WebhookEndpointRow,
} from './webhook-endpoints.repository.js';
import {
  WebhookEventsRepository,
  type WebhookEventRow,
} from '../outbox/webhook-events.repository.js';
import { WebhookMetrics, type DeliveryOutcome } from './webhook-metrics.js';
import { WebhookOutbox } from '../outbox/webhook-outbox.js';
import { WebhookScheduler, type ScheduledAttempt } from './webhook-scheduler.js';
import { WebhookSender } from './webhook-sender.js';
import { signatureHeaders } from './webhook-signer.js';
import { scopeForEventType } from '../outbox/webhook-types.js';
import { AllowedHosts, resolveWebhookUrl, UrlRefused } from './webhook-url-guard.js';
import { WebhooksService } from './webhooks.service.js';

/** The BullMQ queue (only with REDIS_URL). */
export const WEBHOOK_QUEUE = Symbol('WEBHOOK_QUEUE');

/** A claimed attempt with what it needs: its endpoint and event (null when gone). */
interface ClaimedAttempt {
  row: WebhookDeliveryRow;
  endpoint: WebhookEndpointRow | null;
  event: WebhookEventRow | null;
}

/** An attempt's outcome waiting to be written. */
interface RecordedOutcome {
  row: WebhookDeliveryRow;
  endpoint: WebhookEndpointRow;
  result: AttemptResult;
  outcome: DeliveryOutcome;
  at: string;
}

/** What a queued job carries: the delivery and the attempt number it was queued for. */
export interface DeliveryJob {
  id: string;
  attempts: number;
  /** The delivery's endpoint (absent from jobs queued before it was added). */
  endpointId?: string;
}

/**
 * How often an idle in-process worker looks for due rows (events committed here wake it at once, and
 * its own retries at their time), and the Redis engine for lost jobs.
 */
const LOCAL_POLL_MS = 1_000;
const SWEEP_MS = 2_000;
const FAN_OUT_BATCH = 100;
/** The least time between two passes of the engine's loop (fan-out, and the local claim). */
const PASS_GAP_MS = 20;
/**
 * Redis mode: a job waits this long for others to be claimed with it (one statement for up to
 * CLAIM_BATCH jobs, instead of three statements per job).
 */
const CLAIM_WAIT_MS = 5;
const CLAIM_BATCH = 32;
/** Attempts' outcomes are recorded together, one commit per this many milliseconds at most. */
const OUTCOME_FLUSH_MS = 25;

/**
 * The delivery engine. Events committed to the outbox are fanned out into one delivery row per
 * matching endpoint (one instance wins each event); each attempt is claimed with a lease on its row
 * (one instance makes it), sent, and recorded with its next attempt. With REDIS_URL the attempts
 * travel as BullMQ jobs shared by every instance; without it this instance's worker claims due rows
 * itself. Either way the rows are the truth: a lost job or a crashed instance only delays an attempt.
 */
@Injectable()
export class WebhookDeliveryEngine implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger('Webhooks');
  private readonly allowed: AllowedHosts;
  private readonly sender: WebhookSender;
  /** HTTP exchanges in flight (the concurrency slots), and per endpoint. */
  private readonly inFlight = new Set<Promise<void>>();
  private readonly inFlightByEndpoint = new Map<string, number>();
  /** Outcomes being written after their exchange freed its slot (awaited at shutdown). */
  private readonly recording = new Set<Promise<void>>();
  /** Redis mode: jobs waiting for the next batched claim. */
  private claimQueue: {
    job: DeliveryJob;
    resolve: (claimed: ClaimedAttempt | undefined) => void;
    reject: (err: unknown) => void;
  }[] = [];
  private claimTimer: NodeJS.Timeout | undefined;
  /** Redis mode: jobs running on this instance per endpoint (from claim to the receiver's answer). */
  private readonly jobsByEndpoint = new Map<string, number>();
  private running = false;
  private loop: Promise<void> | undefined;
  private wakeUp: (() => void) | undefined;
  private woken = false;
  private lastSweep = 0;
  private lastPurge = 0;
  private lastLoopError = 0;
  private readonly retryTimers = new Set<NodeJS.Timeout>();
  private outcomes: RecordedOutcome[] = [];
  /** Endpoints this instance marked failing (their next success clears the mark). */
  private readonly failing = new Set<string>();
  private outcomeFlush: Promise<void> | undefined;

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly db: DatabaseService,
    private readonly events: WebhookEventsRepository,
    private readonly endpoints: WebhookEndpointsRepository,
    private readonly deliveries: WebhookDeliveriesRepository,
    private readonly artifacts: OAuthArtifactsRepository,
    private readonly outbox: WebhookOutbox,
    private readonly scheduler: WebhookScheduler,
    private readonly metrics: WebhookMetrics,
    private readonly webhooks: WebhooksService,
    @Optional() @Inject(WEBHOOK_QUEUE) private readonly queue?: Queue<DeliveryJob>,
  ) {
    this.allowed = new AllowedHosts(config.webhooks.allowedHosts);
    this.sender = new WebhookSender(config.webhooks.timeoutMs, config.webhooks.concurrency);
  }

  onApplicationBootstrap(): void {
    if (!this.config.webhooks.deliveryEnabled) {
      return;
    }
    this.queue?.on('error', (err: Error) => {
      if (Date.now() - this.lastLoopError > 30_000) {
        this.lastLoopError = Date.now();
        this.logger.warn(`webhook queue: ${err.message}; the rows stay pending meanwhile`);
      }
    });
    this.outbox.onEnqueued(() => this.wake());
    this.scheduler.register((attempts) => this.enqueue(attempts));
    this.running = true;
    this.loop = this.run();
  }

  async onModuleDestroy(): Promise<void> {
    this.running = false;
    for (const timer of this.retryTimers) {
      clearTimeout(timer);
    }
    this.wake();
    await this.loop;
    // attempts in flight finish (each is bounded by the timeout) so their leases are released
    await Promise.allSettled([...this.inFlight]);
    await Promise.allSettled([...this.recording]);
    await this.outcomeFlush;
    this.sender.close();
  }

  private wake(): void {
    this.woken = true;
    this.wakeUp?.();
  }

  private async sleep(ms: number): Promise<void> {
    if (this.woken) {
      this.woken = false;
      return;
    }
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, ms);
      this.wakeUp = () => {
        clearTimeout(timer);
        resolve();
      };
    });
    this.wakeUp = undefined;
    this.woken = false;
  }

  private async run(): Promise<void> {
    while (this.running) {
      const passStarted = Date.now();
      let busy = false;
      try {
        busy = (await this.fanOut()) === FAN_OUT_BATCH;
        if (this.queue) {
          await this.sweepLostJobs();
        } else {
          busy = (await this.claimLocal()) || busy;
        }
        await this.purgeOld();
      } catch (err) {
        if (Date.now() - this.lastLoopError > 30_000) {
          this.lastLoopError = Date.now();
          this.logger.warn({ err }, 'webhook engine pass failed; retrying');
        }
      }
      // passes are PASS_GAP_MS apart at least: the wake-ups of a busy moment (each commit with an
      // event, each freed slot) share one fan-out and one claim, so one commit, instead of one each
      const gap = PASS_GAP_MS - (Date.now() - passStarted);
      if (gap > 0 && this.running) {
        await new Promise((resolve) => setTimeout(resolve, gap));
      }
      if (!busy) {
        await this.sleep(this.queue ? SWEEP_MS / 2 : LOCAL_POLL_MS);
      }
    }
  }

  // ---- fan-out ----------------------------------------------------------------------------

  /** Turns committed outbox events into delivery rows; returns how many events it looked at. */
  async fanOut(): Promise<number> {
    const events = await this.events.undispatched(FAN_OUT_BATCH);
    if (events.length === 0) {
      return 0;
    }
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
          (await this.partnerScopes(endpoint, event)) !== null
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

  /**
   * The scopes a partner endpoint's client holds from the event's user (`[]` for a service-wide
   * endpoint), or null when it may not receive the event: no live grant of that user to that
   * client, or none covering the event's type.
   */
  private async partnerScopes(
    endpoint: WebhookEndpointRow,
    event: WebhookEventRow,
  ): Promise<string[] | null> {
    if (endpoint.oauth_client_id === null || event.type === 'ping') {
      return [];
    }
    if (event.user_id === null) {
      return null;
    }
    const grants = await this.artifacts.grantsOf(event.user_id, endpoint.oauth_client_id);
    const scopes = [...new Set(grants.flatMap(scopesOf))];
    const needed = scopeForEventType(event.type);
    if (grants.length === 0 || (needed && missingScopes(scopes, [needed]).length > 0)) {
      return null;
    }
    return scopes;
  }

  // ---- scheduling -------------------------------------------------------------------------

  private enqueue(attempts: ScheduledAttempt[]): void {
    if (attempts.length === 0) {
      return;
    }
    if (!this.queue) {
      this.wake();
      // a retry of this instance's worker starts on time, not at the next poll
      for (const later of attempts.filter((a) => a.delayMs > 0)) {
        const timer = setTimeout(() => {
          this.retryTimers.delete(timer);
          this.wake();
        }, later.delayMs + 5);
        timer.unref();
        this.retryTimers.add(timer);
      }
      return;
    }
    this.queue
      .addBulk(
        attempts.map((a) => ({
          name: 'deliver',
          data: { id: a.id, attempts: a.attempts, endpointId: a.endpointId },
          opts: {
            // one job per attempt: adding it again (the sweep) while it waits is a no-op
            jobId: `${a.id}-${a.attempts}`,
            delay: Math.max(0, Math.round(a.delayMs)),
            removeOnComplete: true,
            removeOnFail: true,
          },
        })),
      )
      .catch((err: unknown) => {
        // the rows stay pending: the sweep queues them again once Redis answers
        this.logger.warn({ err }, 'could not queue webhook deliveries; the sweep will retry');
      });
  }

  /** Redis mode: due rows nobody holds whose job was lost (a crash between commit and queueing). */
  private async sweepLostJobs(): Promise<void> {
    if (Date.now() - this.lastSweep < SWEEP_MS) {
      return;
    }
    this.lastSweep = Date.now();
    const now = new Date();
    const rows = await this.deliveries.unclaimedDue(
      now.toISOString(),
      new Date(now.getTime() - SWEEP_MS).toISOString(),
      500,
    );
    this.enqueue(
      rows.map((r) => ({
        id: r.id,
        attempts: Number(r.attempts),
        delayMs: 0,
        endpointId: r.endpoint_id,
      })),
    );
  }

  /**
   * A queued job: makes its attempt if the row is still waiting for exactly that attempt. The jobs
   * BullMQ hands this instance at about the same time are claimed together (one statement, and one
   * for their endpoints and events), and the job ends once the receiver answered: the outcome is
   * written behind it (a crash before that leaves the row leased, and the sweep queues it again).
   */
  async runQueuedAttempt(job: DeliveryJob): Promise<void> {
    const endpointId = job.endpointId;
    if (endpointId !== undefined) {
      this.jobsByEndpoint.set(endpointId, (this.jobsByEndpoint.get(endpointId) ?? 0) + 1);
    }
    try {
      await this.claimAndRun(job);
    } finally {
      if (endpointId !== undefined) {
        const left = (this.jobsByEndpoint.get(endpointId) ?? 1) - 1;
        if (left === 0) {
          this.jobsByEndpoint.delete(endpointId);
        } else {
          this.jobsByEndpoint.set(endpointId, left);
        }
      }
    }
  }

  /**
   * Redis mode: whether this instance already runs its share of the slots (WEBHOOK_ENDPOINT_CONCURRENCY)
   * for the job's endpoint; the worker then puts the job back for later instead of holding a slot.
   */
  endpointBusy(job: DeliveryJob): boolean {
    return (
      job.endpointId !== undefined &&
      (this.jobsByEndpoint.get(job.endpointId) ?? 0) >= this.config.webhooks.endpointConcurrency
    );
  }

  private async claimAndRun(job: DeliveryJob): Promise<void> {
    const claimed = await new Promise<ClaimedAttempt | undefined>((resolve, reject) => {
      this.claimQueue.push({ job, resolve, reject });
      if (this.claimQueue.length === 1) {
        this.claimTimer = setTimeout(() => void this.claimQueued(), CLAIM_WAIT_MS);
      } else if (this.claimQueue.length >= CLAIM_BATCH) {
        clearTimeout(this.claimTimer);
        void this.claimQueued();
      }
    });
    if (claimed) {
      await this.track(claimed);
    }
  }

  private async claimQueued(): Promise<void> {
    const waiting = this.claimQueue;
    this.claimQueue = [];
    if (waiting.length === 0) {
      return;
    }
    try {
      const now = Date.now();
      const rows = await this.deliveries.claimAttempts(
        waiting.map((w) => w.job),
        new Date(now).toISOString(),
        new Date(now + this.leaseMs()).toISOString(),
      );
      const claimed = await this.withEndpointsAndEvents(rows);
      const byId = new Map(claimed.map((c) => [c.row.id, c]));
      for (const { job, resolve } of waiting) {
        const mine = byId.get(job.id);
        resolve(mine && Number(mine.row.attempts) === job.attempts ? mine : undefined);
      }
    } catch (err) {
      for (const { reject } of waiting) {
        reject(err);
      }
    }
  }

  /** The claimed rows' endpoints and events in two statements, not two per row. */
  private async withEndpointsAndEvents(rows: WebhookDeliveryRow[]): Promise<ClaimedAttempt[]> {
    if (rows.length === 0) {
      return [];
    }
    const [endpoints, events] = await Promise.all([
      this.endpoints.findMany([...new Set(rows.map((r) => r.endpoint_id))]),
      this.events.findMany([...new Set(rows.map((r) => r.event_id))]),
    ]);
    const endpointById = new Map(endpoints.map((e) => [e.id, e]));
    const eventById = new Map(events.map((e) => [e.id, e]));
    return rows.map((row) => ({
      row,
      endpoint: endpointById.get(row.endpoint_id) ?? null,
      event: eventById.get(row.event_id) ?? null,
    }));
  }

  /**
   * No Redis: claims due rows up to the free slots; true when it filled every free slot. An
   * endpoint with half its share of the slots (WEBHOOK_ENDPOINT_CONCURRENCY) in flight gets none,
   * the others at most half their share per claim: a slow receiver never holds more than its share.
   */
  private async claimLocal(): Promise<boolean> {
    const { concurrency, endpointConcurrency } = this.config.webhooks;
    const free = concurrency - this.inFlight.size;
    if (free <= 0) {
      return false;
    }
    const half = Math.max(1, Math.floor(endpointConcurrency / 2));
    const busy = [...this.inFlightByEndpoint].filter(([, n]) => n >= half).map(([id]) => id);
    const now = Date.now();
    const rows = await this.deliveries.claimDue(
      new Date(now).toISOString(),
      new Date(now + this.leaseMs()).toISOString(),
      free,
      { skipEndpoints: busy, perEndpoint: endpointConcurrency - half },
    );
    for (const claimed of await this.withEndpointsAndEvents(rows)) {
      void this.track(claimed).catch((err: unknown) =>
        this.logger.error({ err }, 'webhook attempt failed'),
      );
    }
    return rows.length === free;
  }

  /**
   * Runs an attempt in a slot: the slot is held for the exchange with the receiver only, the outcome
   * is written behind it. Once half the slots are free the worker claims again (one statement for
   * several rows).
   */
  private track(claimed: ClaimedAttempt): Promise<void> {
    const endpointId = claimed.row.endpoint_id;
    this.inFlightByEndpoint.set(endpointId, (this.inFlightByEndpoint.get(endpointId) ?? 0) + 1);
    let recorded: Promise<void> | undefined;
    const exchange = this.attempt(claimed.row, claimed, (record) => {
      recorded = record;
    }).finally(() => {
      this.inFlight.delete(exchange);
      const left = (this.inFlightByEndpoint.get(endpointId) ?? 1) - 1;
      if (left === 0) {
        this.inFlightByEndpoint.delete(endpointId);
      } else {
        this.inFlightByEndpoint.set(endpointId, left);
      }
      if (!this.queue && this.inFlight.size <= this.config.webhooks.concurrency / 2) {
        this.wake();
      }
    });
    this.inFlight.add(exchange);
    return exchange.then(() => {
      if (!recorded) {
        return;
      }
      const record = recorded.catch((err: unknown) => {
        this.logger.error({ err }, 'could not record a webhook attempt; its lease will run out');
      });
      this.recording.add(record);
      void record.finally(() => this.recording.delete(record));
    });
  }

  /** An attempt holds its row this long: the timeout, plus room for the database writes around it. */
  private leaseMs(): number {
    return this.config.webhooks.timeoutMs + 30_000;
  }

  // ---- one attempt ------------------------------------------------------------------------

  /**
   * One attempt of a claimed row. Its outcome is written before this resolves, or, when `defer` is
   * given, handed to `defer` as a promise so the caller's slot is free as soon as the receiver
   * answered.
   */
  async attempt(
    row: WebhookDeliveryRow,
    loaded?: { endpoint: WebhookEndpointRow | null; event: WebhookEventRow | null },
    defer?: (record: Promise<void>) => void,
  ): Promise<void> {
    const now = () => new Date().toISOString();
    const endpoint = loaded ? loaded.endpoint : await this.endpoints.find(row.endpoint_id);
    if (!endpoint) {
      await this.deliveries.abandon(row.id, 'the endpoint was deleted', now());
      return;
    }
    if (!endpoint.active || Number(endpoint.active) === 0) {
      await this.deliveries.abandon(row.id, 'the endpoint is disabled', now());
      return;
    }
    const event = loaded ? loaded.event : await this.events.find(row.event_id);
    if (!event) {
      await this.deliveries.abandon(row.id, 'the event has expired', now());
      return;
    }
    const scopes = await this.partnerScopes(endpoint, event);
    if (scopes === null) {
      await this.deliveries.abandon(
        row.id,
        "the user's grant to the endpoint's OAuth client no longer covers this event",
        now(),
      );
      return;
    }
    let object = JSON.parse(event.payload) as Record<string, unknown>;
    if (
      endpoint.oauth_client_id !== null &&
      event.type.startsWith('user.') &&
      'email' in object &&
      !scopes.includes('email')
    ) {
      object = { ...object, email: null };
    }
    const body = JSON.stringify({
      id: event.id,
      type: event.type,
      created_at: event.created_at,
      data: { object },
    });
    const secrets = [endpoint.secret];
    if (
      endpoint.previous_secret &&
      endpoint.previous_secret_expires_at &&
      endpoint.previous_secret_expires_at > now()
    ) {
      secrets.push(endpoint.previous_secret);
    }
    const headers = {
      'content-type': 'application/json',
      'user-agent': 'Atrium-Webhooks/1',
      ...signatureHeaders(event.id, body, secrets),
    };

    let result: AttemptResult;
    let outcome: DeliveryOutcome;
    try {
      const target = await resolveWebhookUrl(endpoint.url, this.allowed);
      const sent = await this.sender.send(target, headers, body);
      result = sent;
      const code = sent.statusCode;
      outcome =
        code === null
          ? sent.timedOut
            ? 'timeout'
            : 'error'
          : code >= 200 && code < 300
            ? 'succeeded'
            : code === 410
              ? 'gone'
              : 'failed';
    } catch (err) {
      if (!(err instanceof UrlRefused)) {
        throw err;
      }
      result = { statusCode: null, durationMs: 0, error: `refused: the URL ${err.message}` };
      outcome = 'refused';
    }
    this.metrics.record(outcome, result.durationMs / 1000);
    const record = this.record(row, endpoint, result, outcome);
    if (defer) {
      defer(record);
    } else {
      await record;
    }
  }

  /**
   * Writes an attempt's outcome (the row, its next attempt, the endpoint's failing state). Outcomes
   * are written together, one transaction per OUTCOME_FLUSH_MS at most: on SQLite each commit is a
   * disk sync on the event loop, which a write per delivery would spend thousands of times a second.
   * The retries are queued and the endpoints disabled once the batch committed.
   */
  private record(
    row: WebhookDeliveryRow,
    endpoint: WebhookEndpointRow,
    result: AttemptResult,
    outcome: DeliveryOutcome,
  ): Promise<void> {
    this.outcomes.push({ row, endpoint, result, outcome, at: new Date().toISOString() });
    this.outcomeFlush ??= new Promise<void>((resolve) =>
      setTimeout(resolve, OUTCOME_FLUSH_MS),
    ).then(() => {
      const batch = this.outcomes;
      this.outcomes = [];
      this.outcomeFlush = undefined;
      return this.writeOutcomes(batch);
    });
    return this.outcomeFlush;
  }

  private async writeOutcomes(batch: readonly RecordedOutcome[]): Promise<void> {
    const retries: ScheduledAttempt[] = [];
    const gone = new Set<string>();
    /** Per endpoint, in order: its last outcome, and when its current run of failures began. */
    const state = new Map<string, { failedSince: string | null }>();
    const successes: { id: string; result: AttemptResult; at: string }[] = [];
    const failures: { id: string; result: AttemptResult; next: string | null; at: string }[] = [];
    for (const { row, endpoint, result, outcome, at } of batch) {
      const s = state.get(endpoint.id) ?? { failedSince: null };
      state.set(endpoint.id, s);
      if (outcome === 'succeeded') {
        successes.push({ id: row.id, result, at });
        s.failedSince = null;
        continue;
      }
      if (outcome === 'gone') {
        failures.push({ id: row.id, result, next: null, at });
        gone.add(endpoint.id);
        continue;
      }
      const attempts = Number(row.attempts);
      const delayS = this.config.webhooks.retryScheduleS[attempts];
      const delayMs =
        delayS === undefined ? undefined : delayS * 1000 * (0.9 + Math.random() * 0.2);
      failures.push({
        id: row.id,
        result,
        next: delayMs === undefined ? null : new Date(Date.now() + delayMs).toISOString(),
        at,
      });
      if (delayMs !== undefined) {
        retries.push({ id: row.id, attempts: attempts + 1, delayMs, endpointId: row.endpoint_id });
      }
      s.failedSince ??= at;
    }
    /** The endpoints whose failing streak this batch starts or goes on with, and those it ends. */
    const marking: { id: string; failedSince: string }[] = [];
    const recovered: string[] = [];
    for (const [id, { failedSince }] of state) {
      if (gone.has(id)) {
        continue;
      }
      if (failedSince === null) {
        // failing as read at claim time, or marked so by this instance since
        if (
          this.failing.has(id) ||
          batch.some((o) => o.endpoint.id === id && o.endpoint.failing_since !== null)
        ) {
          recovered.push(id);
        }
      } else {
        marking.push({ id, failedSince });
      }
    }
    const failingFor = await this.db.transaction(async ({ manager }) => {
      // endpoint rows before delivery rows, as deleting or disabling an endpoint locks them: in the
      // other order this transaction and an endpoint's deletion could wait for each other (PostgreSQL
      // then aborts one of them: a 500 for the DELETE)
      await this.endpoints.lockMany(manager, [...marking.map((m) => m.id), ...recovered]);
      await this.deliveries.recordSuccesses(manager, successes);
      for (const f of failures) {
        await this.deliveries.recordFailure(manager, f.id, f.result, f.next, f.at);
      }
      const failing: { id: string; seconds: number; at: string }[] = [];
      for (const { id, failedSince } of marking) {
        const since = await this.endpoints.markFailing(manager, id, failedSince);
        const last = batch.findLast((o) => o.endpoint.id === id)?.at ?? failedSince;
        failing.push({ id, seconds: (Date.parse(last) - Date.parse(since)) / 1000, at: last });
      }
      await this.endpoints.clearFailing(manager, recovered);
      return { failing, recovered };
    });
    for (const { id } of failingFor.failing) {
      this.failing.add(id);
    }
    for (const id of failingFor.recovered) {
      this.failing.delete(id);
    }
    this.enqueue(retries);
    for (const id of gone) {
      await this.webhooks.disableEndpoint(id, 'the receiver answered 410 Gone');
    }
    for (const { id, seconds } of failingFor.failing) {
      if (seconds >= this.config.webhooks.disableAfterS) {
        const last = batch.findLast((o) => o.endpoint.id === id);
        const why = last?.result.error ?? `HTTP ${last?.result.statusCode}`;
        await this.webhooks.disableEndpoint(
          id,
          `every delivery failed for ${Math.round(seconds)} s (last: ${why})`,
        );
      }
    }
  }

  // ---- retention --------------------------------------------------------------------------

  private async purgeOld(): Promise<void> {
    if (Date.now() - this.lastPurge < 3_600_000) {
      return;
    }
    this.lastPurge = Date.now();
    const before = new Date(
      Date.now() - this.config.webhooks.logRetentionDays * 86_400_000,
    ).toISOString();
    await this.deliveries.purge(before);
    await this.events.purge(before);
  }
}
