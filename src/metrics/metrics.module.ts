import { Global, Module } from '@nestjs/common';
import { MetricsController } from '../health/metrics.controller.js';
import { MetricsListener } from './metrics-listener.js';
import { MetricsService } from './metrics.service.js';

@Global()
@Module({
  controllers: [MetricsController],
  providers: [MetricsService, MetricsListener],
  exports: [MetricsService],
})
export class MetricsModule {}
