import { Module } from '@nestjs/common';
import { DeprecationUsageRepository } from './deprecation-usage.repository.js';
import { DeprecationUsageService } from './deprecation-usage.service.js';
import { DeprecationsController } from './deprecations.controller.js';
import { DeprecationsPlugin } from './deprecations.plugin.js';
import { DeprecationsResolver } from './deprecations.resolver.js';

/** Deprecated GraphQL elements: usage per client, its reports and `extensions.deprecations`. */
@Module({
  controllers: [DeprecationsController],
  providers: [
    DeprecationUsageRepository,
    DeprecationUsageService,
    DeprecationsPlugin,
    DeprecationsResolver,
  ],
})
export class DeprecationsModule {}
