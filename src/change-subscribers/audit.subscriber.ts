import { Injectable } from '@nestjs/common';
import { AuditService } from '../audit/audit.service.js';
import type { TxContext } from '../database/database.service.js';
import type { Change } from '../changes/change.js';
import type { ChangeSubscriber } from '../changes/change-record.js';
import { auditEntries } from './audit-entries.js';

/**
 * The audit log (docs/admin.md "Audit log"): the privileged changes become entries in the change's
 * transaction; which ones, `auditEntries` decides.
 */
@Injectable()
export class AuditSubscriber implements ChangeSubscriber {
  readonly name = 'audit-log';

  constructor(private readonly audit: AuditService) {}

  async inTransaction(tx: TxContext, change: Change): Promise<void> {
    for (const entry of auditEntries(change)) {
      await this.audit.record(tx, entry);
    }
  }
}
