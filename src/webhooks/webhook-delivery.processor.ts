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

  /**
   * Closes the worker before @nestjs/bullmq does: gracefully (its jobs finish) when Redis answers,
   * forced when it does not, since a graceful close waits for a connection that never comes (the
   * library's own close, later, then returns this one).
   */
  async beforeApplicationShutdown(): Promise<void> {
    const connected = await Promise.race([
      this.worker.waitUntilReady().then(
        () => true,
        () => false,
      ),
      new Promise<boolean>((resolve) => setTimeout(() => resolve(false), 1_000).unref()),
    ]);
    await this.worker.close(!connected);
  }

  async process(job: Job<DeliveryJob>, token?: string): Promise<void> {
    if (token !== undefined && this.engine.endpointBusy(job.data)) {
      // this endpoint has its share of this instance's slots: the job waits, the slot serves others
      await job.moveToDelayed(Date.now() + BUSY_ENDPOINT_DELAY_MS, token);
      throw new DelayedError();
    }
    try {
      await this.engine.runQueuedAttempt(job.data);
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
