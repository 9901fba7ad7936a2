import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import type { Caller } from '../identity/caller.js';
import { Role } from '../identity/role.js';
import { DomainError } from '../common/errors.js';
import { ChangeRecord } from '../changes/change-record.js';
import { DatabaseService } from '../database/database.service.js';
import type { UserEntity } from './user.entity.js';
import { userFromEntity } from './users.mapper.js';
import { UsersRepository } from './users.repository.js';
import { laterThan, UserRecords } from './user-records.service.js';

/** The 409 of the last-admin rule (docs/contract.md, "The last ADMIN"). */
export const LAST_ADMIN_MESSAGE = 'the last administrator cannot be removed';

/** What the boot did about ADMIN_EMAIL (AdminBootstrap logs it). */
export type EnsureAdminOutcome =
  | { kind: 'exists' }
  | { kind: 'created'; userId: string }
  | { kind: 'promoted'; userId: string; passwordSet: boolean };

/** The last-admin 409, carrying what was refused for the audit log. */
export class LastAdminRefusal extends DomainError {
  constructor(
    readonly userId: string,
    readonly changes: Record<string, [unknown, unknown]>,
  ) {
    super('conflict', LAST_ADMIN_MESSAGE);
  }
}

/**
 * The administrator rules (docs/contract.md, "The last ADMIN"): a live ADMIN always remains (the
 * last-admin lock, the 409 and its audit entry), and ADMIN_EMAIL gets an ADMIN at boot.
 */
@Injectable()
export class AdminRulesService {
  constructor(
    private readonly db: DatabaseService,
    private readonly users: UsersRepository,
    private readonly records: UserRecords,
    private readonly changes: ChangeRecord,
  ) {}

  /** The last-admin lock: taken before any user row lock by whatever may remove an ADMIN. */
  lock(manager: EntityManager): Promise<void> {
    return this.users.lockAdmins(manager);
  }

  /** 409 unless a live ADMIN other than `id` exists (call with the last-admin lock held). */
  async requireAnotherAdmin(
    manager: EntityManager,
    id: string,
    refused: Record<string, [unknown, unknown]>,
  ): Promise<void> {
    if (!(await this.users.liveAdminExists(manager, id))) {
      throw new LastAdminRefusal(id, refused);
    }
  }

  /** A last-admin refusal rolled its change back: it is audited on its own (admin.removal_refused). */
  auditingRefusal<T>(caller: Caller, work: Promise<T>): Promise<T> {
    return work.catch(async (err: unknown) => {
      if (err instanceof LastAdminRefusal) {
        await this.recordRefusal(caller, err);
      }
      throw err;
    });
  }

  async recordRefusal(caller: Caller, refusal: LastAdminRefusal): Promise<void> {
    await this.db.transaction((tx) =>
      this.changes.record(tx, {
        type: 'admin.removal_refused',
        userId: refusal.userId,
        refused: refusal.changes,
        actor: caller,
      }),
    );
  }

  /** True when a live (not deleted) ADMIN exists: the boot says how to create one otherwise. */
  liveAdminExists(): Promise<boolean> {
    return this.db.transaction(({ manager }) => this.users.liveAdminExists(manager));
  }

  /**
   * At boot, when no live ADMIN exists: the live user with this email becomes ADMIN (it keeps its own
   * password; one without a password gets `password`), or, when there is none (a soft-deleted user
   * with this email stays deleted), a new ADMIN is created. Runs under the last-admin lock, so
   * instances booting together promote or create once. A registration of that email between the
   * lookup and the insert (409) makes it look again, and promote that user.
   */
  async ensureAdmin(email: string, password: string): Promise<EnsureAdminOutcome> {
    try {
      return await this.ensureAdminOnce(email, password);
    } catch (err) {
      if (err instanceof DomainError && err.code === 'conflict') {
        return this.ensureAdminOnce(email, password);
      }
      throw err;
    }
  }

  private ensureAdminOnce(email: string, password: string): Promise<EnsureAdminOutcome> {
    return this.db.transaction(async (tx) => {
      const { manager } = tx;
      await this.users.lockAdmins(manager);
      if (await this.users.liveAdminExists(manager)) {
        return { kind: 'exists' };
      }
      const named = await this.users.liveIdByEmail(manager, email.toLowerCase());
      const entity = named ? await this.users.lockedRow(manager, named) : null;
      if (!entity) {
        const created = await this.records.insert(
          tx,
          { name: 'Administrator', email, password, role: Role.ADMIN },
          'system',
        );
        return { kind: 'created', userId: created.id };
      }
      const changes: Partial<UserEntity> = {
        role: Role.ADMIN,
        updatedAt: laterThan(entity.updatedAt),
      };
      if (entity.passwordHash === null) {
        changes.passwordHash = await this.records.hashPassword(password);
      }
      await this.users.update(manager, entity.id, changes);
      // a role change by the system: audited as admin.promoted_at_boot
      await this.changes.record(tx, {
        type: 'user.updated',
        before: userFromEntity(entity),
        after: userFromEntity({ ...entity, ...changes }),
        passwordChanged: changes.passwordHash !== undefined,
        actor: 'system',
      });
      return {
        kind: 'promoted',
        userId: entity.id,
        passwordSet: changes.passwordHash !== undefined,
      };
    });
  }
}
