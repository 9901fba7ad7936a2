import { Injectable } from '@nestjs/common';
import { Counter, Gauge, Histogram } from 'prom-client';
import { MetricsService } from '../metrics/metrics.service.js';
import { WebhookDeliveriesRepository } from './webhook-deliveries.repository.js';
import { WebhookEventsRepository } from '../outbox/webhook-events.repository.js';

/**
 * How an attempt ended: `succeeded` (2xx), `failed` (another status), `gone` (410: the endpoint is
 * disabled), `timeout`, `error` (no connection or a broken one), `refused` (the address is not allowed).
 */
export type DeliveryOutcome = 'succeeded' | 'failed' | 'gone' | 'timeout' | 'error' | 'refused';

/** The webhook metric families (docs/operations.md). */
@Injectable()
export class WebhookMetrics {
  private readonly deliveries: Counter<'outcome'>;
  private readonly seconds: Histogram;
  private unwritten: (() => number) | undefined;

  constructor(
    metrics: MetricsService,
    deliveriesRepo: WebhookDeliveriesRepository,
    eventsRepo: WebhookEventsRepository,
  ) {
    const registry = metrics.registry;
    this.deliveries = new Counter({
      name: 'atrium_webhook_deliveries_total',
      help: 'Webhook delivery attempts by outcome (succeeded, failed, gone, timeout, error, refused)',
      labelNames: ['outcome'],
      registers: [registry],
    });
    this.seconds = new Histogram({
      name: 'atrium_webhook_delivery_seconds',
      help: 'Duration of webhook delivery attempts (request to the receiver until its answer)',
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers: [registry],
    });
    const depth: Gauge = new Gauge({
      name: 'atrium_webhook_queue_depth',
      help: 'Webhook deliveries waiting (pending, retries included) plus events not yet fanned out',
      registers: [registry],
      collect: async () => {
        try {
          const [pending, undispatched] = await Promise.all([
            deliveriesRepo.countPending(),
            eventsRepo.countUndispatched(),
          ]);
          depth.set(pending + undispatched);
        } catch {
          // the database is down: keep the last value (readiness reports the outage)
        }
      },
    });
    const unwritten: Gauge = new Gauge({
      name: 'atrium_webhook_outcomes_unwritten',
      help: 'Webhook attempts answered whose outcome is kept in memory until the database takes it',
      registers: [registry],
      collect: () => unwritten.set(this.unwritten?.() ?? 0),
    });
  }

  /** The delivery engine's count of outcomes not written yet (the outcome writer). */
  observeUnwritten(read: () => number): void {
    this.unwritten = read;
  }

  record(outcome: DeliveryOutcome, seconds: number): void {
    this.deliveries.inc({ outcome });
    this.seconds.observe(seconds);
  }
}
