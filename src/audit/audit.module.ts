import { Global, Module } from '@nestjs/common';
import { AuditEventsRepository } from './audit-events.repository.js';
import { AuditController } from './audit.controller.js';
import { AuditService } from './audit.service.js';
import { AuditResolver } from './audit.resolver.js';

/** The audit log: global, so any module's service can call `AuditService.record`. */
@Global()
@Module({
  controllers: [AuditController],
  providers: [AuditEventsRepository, AuditService, AuditResolver],
  exports: [AuditService],
})
export class AuditModule {}
