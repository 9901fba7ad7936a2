import {
  Inject,
  Injectable,
  Logger,
  Optional,
  type OnApplicationBootstrap,
  type OnModuleDestroy,
} from '@nestjs/common';
import type { Queue } from 'bullmq';
import { OAuthArtifactsRepository } from '../identity/oauth-artifacts.repository.js';
import { APP_CONFIG, type AppConfig } from '../config/config.js';
import { DatabaseService } from '../database/database.service.js';
import { WebhookDeliveriesRepository } from './webhook-deliveries.repository.js';
import { WebhookEndpointsRepository } from './webhook-endpoints.repository.js';
import { WebhookEventsRepository } from '../outbox/webhook-events.repository.js';
import { WebhookMetrics } from './webhook-metrics.js';
import { WebhookOutbox } from '../outbox/webhook-outbox.js';
import { WebhookScheduler } from './webhook-scheduler.js';
import { WebhookSender } from './webhook-sender.js';
import { AllowedHosts } from './webhook-url-guard.js';
import { WebhooksService } from './webhooks.service.js';
import { DeliveryAttempt } from './delivery/attempt.js';
import { AttemptQueue, SWEEP_MS, type DeliveryJob } from './delivery/attempt-queue.js';
import { FAN_OUT_BATCH, WebhookFanOut } from './delivery/fan-out.js';
import { OutcomeWriter } from './delivery/outcome-writer.js';

export type { DeliveryJob } from './delivery/attempt-queue.js';

/** The BullMQ queue (only with REDIS_URL). */
export const WEBHOOK_QUEUE = Symbol('WEBHOOK_QUEUE');

/**
 * How often an idle in-process worker looks for due rows (events committed here wake it at once, and
 * its own retries at their time).
 */
const LOCAL_POLL_MS = 1_000;
/** The least time between two passes of the engine's loop (fan-out, and the local claim). */
const PASS_GAP_MS = 20;

/**
 * The delivery engine. Events committed to the outbox are fanned out into one delivery row per
 * matching endpoint (one instance wins each event: `delivery/fan-out.ts`); each attempt is claimed
 * with a lease on its row (one instance makes it: `delivery/attempt-queue.ts`), sent
 * (`delivery/attempt.ts`), and its outcome written with its next attempt (`delivery/outcome-writer.ts`,
 * which keeps an outcome until the database takes it). With REDIS_URL the attempts travel as BullMQ
 * jobs shared by every instance; without it this instance's worker claims due rows itself. Either
 * way the rows are the truth: a lost job or a crashed instance only delays an attempt.
 */
@Injectable()
export class WebhookDeliveryEngine implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger('Webhooks');
  private readonly sender: WebhookSender;
  private readonly fanOut: WebhookFanOut;
  private readonly writer: OutcomeWriter;
  private readonly attempts: AttemptQueue;
  private running = false;
  private loop: Promise<void> | undefined;
  private wakeUp: (() => void) | undefined;
  private woken = false;
  private lastPurge = 0;
  private lastLoopError = 0;

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    db: DatabaseService,
    private readonly events: WebhookEventsRepository,
    endpoints: WebhookEndpointsRepository,
    private readonly deliveries: WebhookDeliveriesRepository,
    artifacts: OAuthArtifactsRepository,
    private readonly outbox: WebhookOutbox,
    private readonly scheduler: WebhookScheduler,
    metrics: WebhookMetrics,
    webhooks: WebhooksService,
    @Optional() @Inject(WEBHOOK_QUEUE) private readonly queue?: Queue<DeliveryJob>,
  ) {
    const settings = config.webhooks;
    // an attempt holds its row this long: the timeout, plus room for the database writes around it
    const leaseMs = settings.timeoutMs + 30_000;
    const enqueue = (attempts: Parameters<AttemptQueue['enqueue']>[0]) =>
      this.attempts.enqueue(attempts);
    this.sender = new WebhookSender(settings.timeoutMs, settings.concurrency);
    this.writer = new OutcomeWriter({
      db,
      deliveries,
      endpoints,
      config: settings,
      leaseMs,
      enqueue,
      disableEndpoint: (id, reason) => webhooks.disableEndpoint(id, reason),
      logger: this.logger,
    });
    metrics.observeUnwritten(() => this.writer.size);
    this.attempts = new AttemptQueue({
      config: settings,
      events,
      endpoints,
      deliveries,
      attempt: new DeliveryAttempt(
        deliveries,
        artifacts,
        this.sender,
        new AllowedHosts(settings.allowedHosts),
        metrics,
        this.writer,
      ),
      writer: this.writer,
      leaseMs,
      wake: () => this.wake(),
      logger: this.logger,
      queue,
    });
    this.fanOut = new WebhookFanOut(db, events, endpoints, deliveries, artifacts, enqueue);
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
    this.scheduler.register((attempts) => this.attempts.enqueue(attempts));
    this.running = true;
    this.loop = this.run();
  }

  async onModuleDestroy(): Promise<void> {
    this.running = false;
    this.wake();
    await this.loop;
    // attempts in flight finish (each is bounded by the timeout), and their outcomes are written
    await this.attempts.stop();
    const unwritten = await this.writer.drain(this.config.webhooks.timeoutMs);
    if (unwritten > 0) {
      this.logger.error(
        `${unwritten} webhook attempt outcome(s) could not be written before shutdown; those attempts will be made again once their leases run out`,
      );
    }
    this.sender.close();
  }

  /** Redis mode: the BullMQ worker's job (`webhook-delivery.processor.ts`). */
  runQueuedAttempt(job: DeliveryJob): Promise<void> {
    return this.attempts.runQueuedAttempt(job);
  }

  /** Redis mode: whether the job's endpoint has its share of this instance's slots. */
  endpointBusy(job: DeliveryJob): boolean {
    return this.attempts.endpointBusy(job);
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
        busy = (await this.fanOut.run()) === FAN_OUT_BATCH;
        if (this.queue) {
          await this.attempts.sweepLostJobs();
        } else {
          busy = (await this.attempts.claimLocal()) || busy;
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

  /** The log's retention (WEBHOOK_LOG_RETENTION_DAYS), once an hour. */
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
