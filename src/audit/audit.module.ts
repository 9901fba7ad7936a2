import { Global, Module } from '@nestjs/common';
import { AuditEventsRepository } from './audit-events.repository.js';
import { AuditController } from './audit.controller.js';
import { AuditService } from './audit.service.js';

/** The audit log: global, so any module's service can call `AuditService.record`. */
@Global()
@Module({
  controllers: [AuditController],
  providers: [AuditEventsRepository, AuditService],
  exports: [AuditService],
})
export class AuditModule {}
