import { Module } from '@nestjs/common';
import { TerminusModule } from '@nestjs/terminus';
import { ApiIndexController } from './api-index.controller.js';
import { HealthController } from './health.controller.js';
import { MetricsController } from './metrics.controller.js';

@Module({
  imports: [TerminusModule.forRoot({ logger: false, errorLogStyle: 'json' })],
  controllers: [HealthController, MetricsController, ApiIndexController],
})
export class HealthModule {}
