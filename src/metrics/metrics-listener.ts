import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  Inject,
  Injectable,
  Logger,
  type OnApplicationBootstrap,
  type OnApplicationShutdown,
} from '@nestjs/common';
import { APP_CONFIG, type AppConfig } from '../config/config.js';
import { MetricsService } from './metrics.service.js';

/**
 * With METRICS_PORT set, /metrics is served by this listener alone (the main port answers 404), so a
 * deployment publishes the API and keeps the metrics on its internal network: Prometheus scrapes
 * every replica there, not through the load balancer (docs/deployment.md).
 */
@Injectable()
export class MetricsListener implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger('Metrics');
  private server?: Server;

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly metrics: MetricsService,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    if (this.config.metricsPort === undefined) {
      return;
    }
    const server = createServer((req, res) => {
      const path = (req.url ?? '').split('?', 1)[0];
      if (path !== '/metrics' || (req.method !== 'GET' && req.method !== 'HEAD')) {
        res.writeHead(404, { 'Content-Type': 'text/plain; charset=utf-8' }).end('Not found\n');
        return;
      }
      this.metrics.registry.metrics().then(
        (text) => {
          res.writeHead(200, { 'Content-Type': this.metrics.registry.contentType });
          res.end(req.method === 'HEAD' ? undefined : text);
        },
        (err: unknown) => {
          this.logger.error(`metrics collection failed: ${String(err)}`);
          res.writeHead(500).end();
        },
      );
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.config.metricsPort, this.config.host, () => {
        server.off('error', reject);
        resolve();
      });
    });
    this.server = server;
    this.logger.log(`Metrics on ${this.config.host}:${this.port()}/metrics`);
  }

  /** The bound port (METRICS_PORT=0 picks a free one), or undefined without the listener. */
  port(): number | undefined {
    return (this.server?.address() as AddressInfo | null)?.port;
  }

  async onApplicationShutdown(): Promise<void> {
    const server = this.server;
    if (server) {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  }
}
