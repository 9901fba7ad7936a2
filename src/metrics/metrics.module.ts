import { Global, Module } from '@nestjs/common';
import { MetricsListener } from './metrics-listener.js';
import { MetricsService } from './metrics.service.js';

@Global()
@Module({
  providers: [MetricsService, MetricsListener],
  exports: [MetricsService],
})
export class MetricsModule {}
