import { Injectable } from '@nestjs/common';
import type { Caller } from '../identity/caller.js';
import { DomainError } from '../common/errors.js';
import { validateInput } from '../common/validation.js';
import { DatabaseService, type TxContext } from '../database/database.service.js';
import { MAX_BATCH } from './dto/batch.input.js';
import { CreateUserInput, PatchUserInput } from './dto/user.inputs.js';
import type { User } from '../domain/user.js';
import { AdminRulesService, LastAdminRefusal } from './admin-rules.service.js';
import { UserAccountsService } from './user-accounts.service.js';
import { UserRecords } from './user-records.service.js';
import { refuseAccountFieldsToApps, requireAdmin, requireRead } from './user-rights.js';

export interface BatchResult {
  op: 'create' | 'update';
  status: 200 | 201;
  user: User;
}

/**
 * POST /users/batch and bulkCreate: every operation in one transaction, all or nothing. The first
 * failing operation decides the status; its details carry its index.
 */
@Injectable()
export class UserBatchService {
  constructor(
    private readonly db: DatabaseService,
    private readonly accounts: UserAccountsService,
    private readonly records: UserRecords,
    private readonly adminRules: AdminRulesService,
  ) {}

  async batch(caller: Caller, operations: unknown[]): Promise<BatchResult[]> {
    requireRead(caller);
    if (operations.length > MAX_BATCH) {
      throw new DomainError('validation_failed', `At most ${MAX_BATCH} operations`, [
        { field: 'operations', message: `operations must contain at most ${MAX_BATCH} elements` },
      ]);
    }
    let refused: LastAdminRefusal | undefined;
    const done = this.db.transaction(async (tx) => {
      // before any operation locks a user row (a later demotion would wait for the lock holding it)
      if (operations.some(setsRole)) {
        await this.adminRules.lock(tx.manager);
      }
      const results: BatchResult[] = [];
      for (const [index, raw] of operations.entries()) {
        try {
          results.push(await this.batchOperation(tx, caller, raw));
        } catch (err) {
          if (err instanceof LastAdminRefusal) {
            refused = err;
          }
          throw withIndex(err, index);
        }
      }
      return results;
    });
    return done.catch(async (err: unknown) => {
      if (refused) {
        await this.adminRules.recordRefusal(caller, refused);
      }
      throw err;
    });
  }

  private async batchOperation(tx: TxContext, caller: Caller, raw: unknown): Promise<BatchResult> {
    const op = raw as { op?: unknown; id?: unknown; data?: unknown };
    if (op === null || typeof op !== 'object' || (op.op !== 'create' && op.op !== 'update')) {
      throw new DomainError('validation_failed', 'Invalid operation', [
        { field: 'op', message: 'op must be create or update' },
      ]);
    }
    const extra = Object.keys(op).filter((k) => !['op', 'id', 'data'].includes(k));
    if (extra.length > 0) {
      throw new DomainError('validation_failed', 'Invalid operation', [
        { field: extra[0], message: `${extra[0]} is not a known member` },
      ]);
    }
    if (op.op === 'create') {
      requireAdmin(caller, 'Only administrators can create users');
      refuseAccountFieldsToApps(caller, 'create users');
      const input = await validateInput(CreateUserInput, op.data);
      return {
        op: 'create',
        status: 201,
        user: await this.records.insert(tx, input, caller),
      };
    }
    if (typeof op.id !== 'string') {
      throw new DomainError('validation_failed', 'Invalid operation', [
        { field: 'id', message: 'id is required for update' },
      ]);
    }
    const patch = await validateInput(PatchUserInput, op.data);
    return {
      op: 'update',
      status: 200,
      user: await this.accounts.applyUpdate(tx, caller, op.id, patch),
    };
  }
}

/** A batch operation that names a role: it may demote an ADMIN. */
function setsRole(raw: unknown): boolean {
  const op = raw as { op?: unknown; data?: unknown } | null;
  return (
    typeof op === 'object' &&
    op !== null &&
    op.op === 'update' &&
    typeof op.data === 'object' &&
    op.data !== null &&
    'role' in op.data
  );
}

function withIndex(err: unknown, index: number): unknown {
  if (!(err instanceof DomainError)) {
    return err;
  }
  const details = err.details?.length
    ? err.details.map((d) => ({ index, ...d }))
    : [{ index, message: err.message }];
  return new DomainError(err.code, `Operation ${index} failed: ${err.message}`, details);
}
