import { Processor, WorkerHost } from '@nestjs/bullmq';
import type { Job } from 'bullmq';
import { WebhookDeliveryEngine, type DeliveryJob } from './webhook-delivery.engine.js';

/** BullMQ worker of the deliveries queue: each job is one attempt, claimed on its row first. */
export class WebhookDeliveryProcessor extends WorkerHost {
  constructor(private readonly engine: WebhookDeliveryEngine) {
    super();
  }

  async process(job: Job<DeliveryJob>): Promise<void> {
    await this.engine.runQueuedAttempt(job.data);
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
