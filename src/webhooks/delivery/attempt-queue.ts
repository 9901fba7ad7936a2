import type { Logger } from '@nestjs/common';
import type { Queue } from 'bullmq';
import type { WebhooksConfig } from '../../config/config.js';
import type { WebhookEventsRepository } from '../../outbox/webhook-events.repository.js';
import type {
  WebhookDeliveriesRepository,
  WebhookDeliveryRow,
} from '../webhook-deliveries.repository.js';
import type { WebhookEndpointsRepository } from '../webhook-endpoints.repository.js';
import type { ScheduledAttempt } from '../webhook-scheduler.js';
import type { ClaimedAttempt, DeliveryAttempt } from './attempt.js';
import type { OutcomeWriter } from './outcome-writer.js';

/** What a queued job carries: the delivery and the attempt number it was queued for. */
export interface DeliveryJob {
  id: string;
  attempts: number;
  /** The delivery's endpoint (absent from jobs queued before it was added). */
  endpointId?: string;
}

/** Redis mode: how often an instance looks for due rows whose job was lost. */
export const SWEEP_MS = 2_000;
/**
 * Redis mode: a job waits this long for others to be claimed with it (one statement for up to
 * CLAIM_BATCH jobs, instead of three statements per job).
 */
const CLAIM_WAIT_MS = 5;
const CLAIM_BATCH = 32;

export interface AttemptQueueDeps {
  config: WebhooksConfig;
  events: WebhookEventsRepository;
  endpoints: WebhookEndpointsRepository;
  deliveries: WebhookDeliveriesRepository;
  attempt: DeliveryAttempt;
  writer: OutcomeWriter;
  /** How long a claim holds its row. */
  leaseMs: number;
  /** Wakes the engine's loop (the in-process worker claims at once). */
  wake: () => void;
  logger: Logger;
  queue?: Queue<DeliveryJob>;
}

/**
 * Which attempts run when, and where: BullMQ jobs with REDIS_URL (shared by every instance), this
 * instance's worker claiming due rows otherwise. Either way an attempt runs only on a row claimed
 * with a lease, within the concurrency slots (WEBHOOK_CONCURRENCY, WEBHOOK_ENDPOINT_CONCURRENCY),
 * and never on a row whose previous outcome this instance still holds.
 */
export class AttemptQueue {
  /** HTTP exchanges in flight (the concurrency slots), and per endpoint. */
  private readonly inFlight = new Set<Promise<void>>();
  private readonly inFlightByEndpoint = new Map<string, number>();
  /** Redis mode: jobs waiting for the next batched claim. */
  private claimQueue: {
    job: DeliveryJob;
    resolve: (claimed: ClaimedAttempt | undefined) => void;
    reject: (err: unknown) => void;
  }[] = [];
  private claimTimer: NodeJS.Timeout | undefined;
  /** Redis mode: jobs running on this instance per endpoint (from claim to the receiver's answer). */
  private readonly jobsByEndpoint = new Map<string, number>();
  private readonly retryTimers = new Set<NodeJS.Timeout>();
  private lastSweep = 0;

  constructor(private readonly deps: AttemptQueueDeps) {}

  enqueue(attempts: ScheduledAttempt[]): void {
    if (attempts.length === 0) {
      return;
    }
    const { queue, wake, logger } = this.deps;
    if (!queue) {
      wake();
      // a retry of this instance's worker starts on time, not at the next poll
      for (const later of attempts.filter((a) => a.delayMs > 0)) {
        const timer = setTimeout(() => {
          this.retryTimers.delete(timer);
          wake();
        }, later.delayMs + 5);
        timer.unref();
        this.retryTimers.add(timer);
      }
      return;
    }
    queue
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
        logger.warn({ err }, 'could not queue webhook deliveries; the sweep will retry');
      });
  }

  /** Redis mode: due rows nobody holds whose job was lost (a crash between commit and queueing). */
  async sweepLostJobs(): Promise<void> {
    if (Date.now() - this.lastSweep < SWEEP_MS) {
      return;
    }
    this.lastSweep = Date.now();
    const now = new Date();
    const rows = await this.deps.deliveries.unclaimedDue(
      now.toISOString(),
      new Date(now.getTime() - SWEEP_MS).toISOString(),
      500,
    );
    this.enqueue(
      rows
        .filter((r) => !this.deps.writer.holds(r.id))
        .map((r) => ({
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
   * for their endpoints and events), and the job ends once the receiver answered: the outcome writer
   * writes the outcome behind it (a crash before that leaves the row leased, and the sweep queues it
   * again).
   */
  async runQueuedAttempt(job: DeliveryJob): Promise<void> {
    const endpointId = job.endpointId;
    if (endpointId !== undefined) {
      this.jobsByEndpoint.set(endpointId, (this.jobsByEndpoint.get(endpointId) ?? 0) + 1);
    }
    try {
      // the outcome of this delivery's last attempt is not written yet: the writer queues the
      // next attempt itself once it is
      if (this.deps.writer.holds(job.id)) {
        return;
      }
      await this.deps.writer.whenRoom();
      const claimed = await this.claimBatched(job);
      if (claimed) {
        await this.track(claimed);
      }
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
      (this.jobsByEndpoint.get(job.endpointId) ?? 0) >= this.deps.config.endpointConcurrency
    );
  }

  private claimBatched(job: DeliveryJob): Promise<ClaimedAttempt | undefined> {
    return new Promise<ClaimedAttempt | undefined>((resolve, reject) => {
      this.claimQueue.push({ job, resolve, reject });
      if (this.claimQueue.length === 1) {
        this.claimTimer = setTimeout(() => void this.claimQueued(), CLAIM_WAIT_MS);
      } else if (this.claimQueue.length >= CLAIM_BATCH) {
        clearTimeout(this.claimTimer);
        void this.claimQueued();
      }
    });
  }

  private async claimQueued(): Promise<void> {
    const waiting = this.claimQueue;
    this.claimQueue = [];
    if (waiting.length === 0) {
      return;
    }
    try {
      const now = Date.now();
      const rows = await this.deps.deliveries.claimAttempts(
        waiting.map((w) => w.job),
        new Date(now).toISOString(),
        new Date(now + this.deps.leaseMs).toISOString(),
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

  /**
   * The claimed rows' endpoints and events in two statements, not two per row. A row whose last
   * outcome this instance still holds is left out: the claim only renewed its lease.
   */
  private async withEndpointsAndEvents(rows: WebhookDeliveryRow[]): Promise<ClaimedAttempt[]> {
    const fresh = rows.filter((r) => !this.deps.writer.holds(r.id));
    if (fresh.length === 0) {
      return [];
    }
    const [endpoints, events] = await Promise.all([
      this.deps.endpoints.findMany([...new Set(fresh.map((r) => r.endpoint_id))]),
      this.deps.events.findMany([...new Set(fresh.map((r) => r.event_id))]),
    ]);
    const endpointById = new Map(endpoints.map((e) => [e.id, e]));
    const eventById = new Map(events.map((e) => [e.id, e]));
    return fresh.map((row) => ({
      row,
      endpoint: endpointById.get(row.endpoint_id) ?? null,
      event: eventById.get(row.event_id) ?? null,
    }));
  }

  /**
   * No Redis: claims due rows up to the free slots; true when it filled every free slot. An
   * endpoint with half its share of the slots (WEBHOOK_ENDPOINT_CONCURRENCY) in flight gets none,
   * the others at most half their share per claim: a slow receiver never holds more than its share.
   * Nothing is claimed while the outcome writer is full.
   */
  async claimLocal(): Promise<boolean> {
    const { concurrency, endpointConcurrency } = this.deps.config;
    const free = concurrency - this.inFlight.size;
    if (free <= 0 || !this.deps.writer.hasRoom()) {
      return false;
    }
    const half = Math.max(1, Math.floor(endpointConcurrency / 2));
    const busy = [...this.inFlightByEndpoint].filter(([, n]) => n >= half).map(([id]) => id);
    const now = Date.now();
    const rows = await this.deps.deliveries.claimDue(
      new Date(now).toISOString(),
      new Date(now + this.deps.leaseMs).toISOString(),
      free,
      { skipEndpoints: busy, perEndpoint: endpointConcurrency - half },
    );
    for (const claimed of await this.withEndpointsAndEvents(rows)) {
      void this.track(claimed).catch((err: unknown) =>
        this.deps.logger.error({ err }, 'webhook attempt failed'),
      );
    }
    return rows.length === free;
  }

  /**
   * Runs an attempt in a slot: the slot is held for the exchange with the receiver only, the
   * outcome writer writes the outcome behind it. Once half the slots are free the in-process worker
   * claims again (one statement for several rows).
   */
  private track(claimed: ClaimedAttempt): Promise<void> {
    const endpointId = claimed.row.endpoint_id;
    this.inFlightByEndpoint.set(endpointId, (this.inFlightByEndpoint.get(endpointId) ?? 0) + 1);
    const exchange = this.deps.attempt.run(claimed).finally(() => {
      this.inFlight.delete(exchange);
      const left = (this.inFlightByEndpoint.get(endpointId) ?? 1) - 1;
      if (left === 0) {
        this.inFlightByEndpoint.delete(endpointId);
      } else {
        this.inFlightByEndpoint.set(endpointId, left);
      }
      if (!this.deps.queue && this.inFlight.size <= this.deps.config.concurrency / 2) {
        this.deps.wake();
      }
    });
    this.inFlight.add(exchange);
    return exchange;
  }

  /** Shutdown: no retry timer fires any more; resolves once the exchanges in flight ended. */
  async stop(): Promise<void> {
    for (const timer of this.retryTimers) {
      clearTimeout(timer);
    }
    await Promise.allSettled([...this.inFlight]);
  }
}
