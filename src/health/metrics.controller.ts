import { Controller, Get, Header, Inject } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import { Public } from '../identity/auth.decorators.js';
import { NotFound } from '../common/errors.js';
import { APP_CONFIG, type AppConfig } from '../config/config.js';
import { MetricsService } from '../metrics/metrics.service.js';

@ApiExcludeController()
@Controller('metrics')
@Public()
export class MetricsController {
  constructor(
    private readonly metrics: MetricsService,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  @Get()
  @Header('Content-Type', 'text/plain; version=0.0.4; charset=utf-8')
  scrape(): Promise<string> {
    if (this.config.metricsPort !== undefined) {
      // served on the internal listener only (metrics-listener.ts)
      throw NotFound();
    }
    return this.metrics.registry.metrics();
  }
}
