import { OnWorkerEvent, Processor, WorkerHost } from '@nestjs/bullmq';
import { Injectable, Logger } from '@nestjs/common';
import { DelayedError, type Job } from 'bullmq';
import { WebhookDeliveryEngine, type DeliveryJob } from './webhook-delivery.engine.js';

/** How long a job of an endpoint that has its share of the slots waits before it is tried again. */
const BUSY_ENDPOINT_DELAY_MS = 500;

/** BullMQ worker of the deliveries queue: each job is one attempt, claimed on its row first. */
@Injectable()
export class WebhookDeliveryProcessor extends WorkerHost {
  private readonly logger = new Logger('Webhooks');

  constructor(private readonly engine: WebhookDeliveryEngine) {
    super();
  }

  private lastError = 0;

  /** Redis down: one warning per 30 s (BullMQ prints every reconnect failure otherwise). */
  @OnWorkerEvent('error')
  onError(err: Error): void {
    if (Date.now() - this.lastError > 30_000) {
      this.lastError = Date.now();
      this.logger.warn(`webhook queue worker: ${err.message}; the rows stay pending meanwhile`);
    }
  }

  /** Attempts this worker is making now. */
  private readonly running = new Set<Promise<void>>();

  /**
   * Closes the worker before @nestjs/bullmq does: it takes no new job, the attempts it is making
   * finish (each is bounded by the delivery timeout), then its connections are dropped at once. A
   * graceful BullMQ close would wait for Redis to answer QUIT on every connection: forever while
   * one of them is still reconnecting (Redis gone, or back but not yet redialled), which held the
   * shutdown. (The library's own close, later, then returns this one.)
   */
  async beforeApplicationShutdown(): Promise<void> {
    await this.worker.pause(true);
    await Promise.allSettled([...this.running]);
    await this.worker.close(true);
  }

  async process(job: Job<DeliveryJob>, token?: string): Promise<void> {
    if (token !== undefined && this.engine.endpointBusy(job.data)) {
      // this endpoint has its share of this instance's slots: the job waits, the slot serves others
      await job.moveToDelayed(Date.now() + BUSY_ENDPOINT_DELAY_MS, token);
      throw new DelayedError();
    }
    const attempt = this.attempt(job.data);
    this.running.add(attempt);
    try {
      await attempt;
    } finally {
      this.running.delete(attempt);
    }
  }

  private async attempt(data: DeliveryJob): Promise<void> {
    try {
      await this.engine.runQueuedAttempt(data);
    } catch (err) {
      // the row stays pending (its lease runs out): the sweep queues the attempt again
      this.logger.error({ err }, 'webhook attempt failed');
    }
  }
}

/** The processor class bound to this deployment's queue name (it carries REDIS_PREFIX). */
export function processorFor(
  queueName: string,
  concurrency: number,
): typeof WebhookDeliveryProcessor {
  class PrefixedWebhookDeliveryProcessor extends WebhookDeliveryProcessor {}
  Processor(queueName, { concurrency })(PrefixedWebhookDeliveryProcessor);
  return PrefixedWebhookDeliveryProcessor;
}
