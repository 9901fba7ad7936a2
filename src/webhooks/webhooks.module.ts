import { BullModule, getQueueToken } from '@nestjs/bullmq';
import { Module, type DynamicModule, type Provider } from '@nestjs/common';
import { OAuthModule } from '../auth/oauth/oauth.module.js';
import type { AppConfig } from '../config/config.js';
import { WebhookDeliveriesRepository } from './webhook-deliveries.repository.js';
import { WEBHOOK_QUEUE, WebhookDeliveryEngine } from './webhook-delivery.engine.js';
import { processorFor } from './webhook-delivery.processor.js';
import { WebhookEndpointsRepository } from './webhook-endpoints.repository.js';
import { WebhookMetrics } from './webhook-metrics.js';
import { WebhookScheduler } from './webhook-scheduler.js';
import { WebhooksController } from './webhooks.controller.js';
import { WebhooksResolver } from './webhooks.resolver.js';
import { WebhooksService } from './webhooks.service.js';

/** BullMQ forbids `:` in queue names: REDIS_PREFIX (`atrium:`) travels with `-` instead. */
function webhookQueueName(redisPrefix: string): string {
  return `${redisPrefix.replace(/:/g, '-')}webhook-deliveries`;
}

/** ioredis options of BullMQ's connections, from REDIS_URL (workers block: no per-command retry cap). */
function bullConnection(redisUrl: string) {
  const url = new URL(redisUrl);
  return {
    host: url.hostname,
    port: Number(url.port || 6379),
    username: url.username ? decodeURIComponent(url.username) : undefined,
    password: url.password ? decodeURIComponent(url.password) : undefined,
    db: url.pathname.length > 1 ? Number(url.pathname.slice(1)) : 0,
    ...(url.protocol === 'rediss:' ? { tls: {} } : {}),
    maxRetriesPerRequest: null,
  };
}

/**
 * Webhooks (docs/webhooks.md): endpoints, the delivery log and the delivery engine. With REDIS_URL
 * the attempts are BullMQ jobs (`@nestjs/bullmq`) on a queue shared by every instance; without it
 * the engine's in-process worker claims due rows itself.
 */
@Module({})
export class WebhooksModule {
  static forRoot(config: AppConfig): DynamicModule {
    const providers: Provider[] = [
      WebhookEndpointsRepository,
      WebhookDeliveriesRepository,
      WebhookScheduler,
      WebhookMetrics,
      WebhooksService,
      WebhookDeliveryEngine,
      WebhooksResolver,
    ];
    const imports: DynamicModule['imports'] = [OAuthModule];
    if (config.redisUrl) {
      const name = webhookQueueName(config.redisPrefix);
      imports.push(
        BullModule.forRoot({
          connection: bullConnection(config.redisUrl),
          prefix: `${config.redisPrefix}bull`,
        }),
        BullModule.registerQueue({ name }),
      );
      providers.push({ provide: WEBHOOK_QUEUE, useExisting: getQueueToken(name) });
      if (config.webhooks.deliveryEnabled) {
        providers.push(processorFor(name, config.webhooks.concurrency));
      }
    }
    return {
      module: WebhooksModule,
      imports,
      controllers: [WebhooksController],
      providers,
    };
  }
}
