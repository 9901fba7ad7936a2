import type { Logger } from '@nestjs/common';
import type { WebhooksConfig } from '../../config/config.js';
import type { DatabaseService } from '../../database/database.service.js';
import { domainErrorOfDatabase } from '../../database/db-errors.js';
import type { WebhookDeliveriesRepository } from '../webhook-deliveries.repository.js';
import type { WebhookEndpointsRepository } from '../webhook-endpoints.repository.js';
import type { ScheduledAttempt } from '../webhook-scheduler.js';
import { commitOutcomes, type CommittedBatch, type HeldOutcome } from './outcome-batch.js';

/** Outcomes are written together, one commit per this many milliseconds at most. */
const FLUSH_MS = 25;
/** A failed write is tried again after 100 ms, doubling up to 2 s while it keeps failing. */
const RETRY_FIRST_MS = 100;
const RETRY_MAX_MS = 2_000;
/** A batch the database refuses for another reason than being unreachable is tried this often. */
const REFUSED_TRIES = 5;
/** The most outcomes written in one transaction. */
const MAX_BATCH = 1_000;

export interface OutcomeWriterDeps {
  db: DatabaseService;
  deliveries: WebhookDeliveriesRepository;
  endpoints: WebhookEndpointsRepository;
  config: WebhooksConfig;
  /** How long a claim holds its row; held outcomes keep their rows' leases at least half that. */
  leaseMs: number;
  /** Queues the retries of a written batch. */
  enqueue: (attempts: ScheduledAttempt[]) => void;
  /** Disables an endpoint (410 Gone, or failing for WEBHOOK_DISABLE_AFTER_S). */
  disableEndpoint: (id: string, reason: string) => Promise<void>;
  logger: Logger;
}

/** An outcome not written yet, and until when its row is leased to this instance. */
interface Held extends HeldOutcome {
  leaseUntil: number;
}

/**
 * Owns every attempt's outcome from the receiver's answer until it is written. Outcomes are written
 * in batches (on SQLite each commit is a disk sync on the event loop, which a write per delivery
 * would spend thousands of times a second). A batch that does not commit (the connection dropped,
 * the database paused or locked) stays in memory and is written again, 100 ms later then up to every
 * 2 s, until the database takes it: an answered attempt is never sent again because its outcome could
 * not be written. Meanwhile the rows stay leased to this instance: the writer extends their leases,
 * and this instance's own claims skip them (`holds`). The memory is bounded: once `capacity`
 * outcomes wait, the engine claims no new attempt (`hasRoom`, `whenRoom`).
 */
export class OutcomeWriter {
  readonly capacity: number;
  private readonly held = new Map<string, Held>();
  private queued: HeldOutcome[] = [];
  private timer: NodeJS.Timeout | undefined;
  private writing: Promise<void> | undefined;
  private renewTimer: NodeJS.Timeout | undefined;
  private failures = 0;
  private lastWarning = 0;
  /** Endpoints this instance marked failing (their next success clears the mark). */
  private readonly failing = new Set<string>();
  private waiters: (() => void)[] = [];
  private closed = false;

  constructor(private readonly deps: OutcomeWriterDeps) {
    this.capacity = Math.max(1_000, 4 * deps.config.concurrency);
  }

  /** Takes an attempt's outcome; it is written within FLUSH_MS, or as soon as the database is back. */
  record(outcome: HeldOutcome): void {
    const leaseUntil = outcome.row.lease_until ? Date.parse(outcome.row.lease_until) : Date.now();
    this.held.set(outcome.row.id, { ...outcome, leaseUntil });
    this.queued.push(outcome);
    this.renewTimer ??= setInterval(
      () => this.renewLeases(),
      Math.max(250, this.deps.leaseMs / 4),
    ).unref();
    this.schedule(FLUSH_MS);
  }

  /** Whether this delivery's last attempt has an outcome here not written yet. */
  holds(deliveryId: string): boolean {
    return this.held.has(deliveryId);
  }

  /** Outcomes not written yet. */
  get size(): number {
    return this.held.size;
  }

  hasRoom(): boolean {
    return this.closed || this.held.size < this.capacity;
  }

  /** Resolves once fewer than `capacity` outcomes wait (at once when they already do). */
  whenRoom(): Promise<void> {
    if (this.hasRoom()) {
      return Promise.resolve();
    }
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  /**
   * Shutdown: writes what it holds, trying for up to `ms`; returns how many outcomes are still not
   * written (their rows' leases run out and their attempts are made again, as after a crash).
   */
  async drain(ms: number): Promise<number> {
    const deadline = Date.now() + ms;
    while (this.held.size > 0 && Date.now() < deadline) {
      if (this.writing) {
        await this.writing;
        continue;
      }
      clearTimeout(this.timer);
      this.timer = undefined;
      await this.flush();
      if (this.held.size > 0) {
        const pause = Math.min(this.backoff(), deadline - Date.now());
        await new Promise((resolve) => setTimeout(resolve, Math.max(0, pause)));
      }
    }
    // no one waits for room any more; an outcome recorded after this (a BullMQ job the worker was
    // still running) is still written by the timer while the database is open
    this.closed = true;
    clearInterval(this.renewTimer);
    this.renewTimer = undefined;
    this.release();
    return this.held.size;
  }

  private backoff(): number {
    return Math.min(RETRY_MAX_MS, RETRY_FIRST_MS * 2 ** Math.max(0, this.failures - 1));
  }

  private schedule(delayMs: number): void {
    if (this.timer || this.writing) {
      return;
    }
    this.timer = setTimeout(() => {
      this.timer = undefined;
      void this.flush();
    }, delayMs);
  }

  private flush(): Promise<void> {
    if (this.writing || this.queued.length === 0) {
      return this.writing ?? Promise.resolve();
    }
    const batch = this.queued.splice(0, MAX_BATCH);
    this.writing = this.write(batch).finally(() => {
      this.writing = undefined;
      // after shutdown's drain a failed write is not tried again (its lease runs out instead)
      if (this.queued.length > 0 && !(this.closed && this.failures > 0)) {
        this.schedule(this.failures > 0 ? this.backoff() : FLUSH_MS);
      }
    });
    return this.writing;
  }

  private async write(batch: HeldOutcome[]): Promise<void> {
    const { db, deliveries, endpoints, config, logger } = this.deps;
    let committed: CommittedBatch;
    try {
      committed = await commitOutcomes(db, deliveries, endpoints, config, this.failing, batch);
    } catch (err) {
      this.failures += 1;
      const unreachable = domainErrorOfDatabase(err)?.code === 'service_unavailable';
      if (!unreachable && this.failures > REFUSED_TRIES) {
        // not an outage: writing it again would not help, and would hold every later outcome
        logger.error(
          { err },
          `could not record ${batch.length} webhook attempt(s) after ${REFUSED_TRIES} tries; their leases will run out and they will be made again`,
        );
        this.failures = 0;
        this.forget(batch);
        return;
      }
      this.queued = [...batch, ...this.queued];
      if (Date.now() - this.lastWarning > 30_000) {
        this.lastWarning = Date.now();
        logger.warn(
          { err },
          `could not record ${this.held.size} webhook attempt(s); kept in memory and written when the database answers`,
        );
      }
      return;
    }
    this.failures = 0;
    this.forget(batch);
    await this.followUp(committed);
  }

  /** What a committed batch leaves to do; a failure here loses nothing of the batch itself. */
  private async followUp({ retries, gone, failing, recovered }: CommittedBatch): Promise<void> {
    for (const { id } of failing) {
      this.failing.add(id);
    }
    for (const id of recovered) {
      this.failing.delete(id);
    }
    this.deps.enqueue(retries);
    try {
      for (const id of gone) {
        await this.deps.disableEndpoint(id, 'the receiver answered 410 Gone');
      }
      for (const { id, seconds, why } of failing) {
        if (seconds >= this.deps.config.disableAfterS) {
          await this.deps.disableEndpoint(
            id,
            `every delivery failed for ${Math.round(seconds)} s (last: ${why})`,
          );
        }
      }
    } catch (err) {
      this.deps.logger.error({ err }, 'could not disable a webhook endpoint');
    }
  }

  private forget(batch: readonly HeldOutcome[]): void {
    for (const { row } of batch) {
      this.held.delete(row.id);
    }
    if (this.held.size === 0) {
      clearInterval(this.renewTimer);
      this.renewTimer = undefined;
    }
    this.release();
  }

  private release(): void {
    if (this.hasRoom() && this.waiters.length > 0) {
      const waiting = this.waiters;
      this.waiters = [];
      for (const resolve of waiting) {
        resolve();
      }
    }
  }

  /**
   * Extends the leases of held rows with less than half a lease left, so that no instance takes
   * their attempts over while the outcome write keeps failing (a statement this light can get
   * through when the batch does not, e.g. a batch waiting on a lock).
   */
  private renewLeases(): void {
    const now = Date.now();
    const due = [...this.held.values()].filter((h) => h.leaseUntil - now < this.deps.leaseMs / 2);
    if (due.length === 0) {
      return;
    }
    const until = now + this.deps.leaseMs;
    this.deps.deliveries
      .extendLeases(
        due.map((h) => h.row.id),
        new Date(until).toISOString(),
      )
      .then(
        () => {
          for (const h of due) {
            h.leaseUntil = until;
          }
        },
        () => undefined, // the database is still away: the outcome write's own warning says so
      );
  }
}
