import { Injectable } from '@nestjs/common';
import { OAuthArtifactsRepository } from '../identity/oauth-artifacts.repository.js';
import { isAdmin, type Caller } from '../identity/caller.js';
import { Role, roleAtLeast } from '../identity/role.js';
import { Forbidden, NotFound, PreconditionFailed } from '../common/errors.js';
import { isId, nowIso } from '../common/ids.js';
import { ChangeRecord } from '../changes/change-record.js';
import { DatabaseService, type TxContext } from '../database/database.service.js';
import { RefreshTokensRepository } from '../database/refresh-tokens.repository.js';
import type {
  CreateUserInput,
  PatchUserInput,
  RegisterInput,
  ReplaceUserInput,
} from './dto/user.inputs.js';
import type { User } from '../domain/user.js';
import type { UserEntity } from './user.entity.js';
import { userFromEntity } from './users.mapper.js';
import { UsersRepository } from './users.repository.js';
import { AdminRulesService } from './admin-rules.service.js';
import { laterThan, UserRecords } from './user-records.service.js';
import {
  partnerAppMayPatch,
  refuseAccountFieldsToApps,
  requireAdmin,
  requireSelfOrAdmin,
} from './user-rights.js';

/** Checked against the stored user inside the write transaction (If-Match); false -> 412. */
export type Precondition = (current: User) => boolean;

/**
 * Account changes (REST and GraphQL alike): creating, registering, changing (profile, email, role,
 * password: a new password ends every session) and deleting a user. The last-admin rule is
 * AdminRulesService's; the batch (UserBatchService) runs `UserRecords.insert`/`applyUpdate` in its
 * transaction. Each records its change (ChangeRecord), whose subscribers count, audit, send the
 * webhook and publish.
 */
@Injectable()
export class UserAccountsService {
  constructor(
    private readonly db: DatabaseService,
    private readonly refreshTokens: RefreshTokensRepository,
    private readonly users: UsersRepository,
    private readonly oauthArtifacts: OAuthArtifactsRepository,
    private readonly changes: ChangeRecord,
    private readonly records: UserRecords,
    private readonly adminRules: AdminRulesService,
  ) {}

  async create(caller: Caller, input: CreateUserInput): Promise<User> {
    requireAdmin(caller, 'Only administrators can create users');
    refuseAccountFieldsToApps(caller, 'create users');
    return this.db.transaction((tx) => this.records.insert(tx, input, caller));
  }

  /** POST /auth/register: anyone may create a USER for themself. */
  async register(input: RegisterInput): Promise<User> {
    return this.db.transaction((tx) =>
      this.records.insert(tx, { ...input, role: Role.USER }, null),
    );
  }

  /** PUT: name, email and age are replaced (absent age -> null); role/password change only when given. */
  async replace(
    caller: Caller,
    id: string,
    input: ReplaceUserInput,
    precondition?: Precondition,
  ): Promise<User> {
    return this.update(caller, id, { ...input, age: input.age ?? null }, precondition);
  }

  /** PATCH (merge patch) and the GraphQL updateUser: only supplied members change. */
  async update(
    caller: Caller,
    id: string,
    patch: PatchUserInput,
    precondition?: Precondition,
  ): Promise<User> {
    return this.adminRules.auditingRefusal(
      caller,
      this.db.transaction((tx) => this.applyUpdate(tx, caller, id, patch, precondition)),
    );
  }

  /** Soft delete; deleting an already deleted user succeeds again (idempotent). */
  async remove(caller: Caller, id: string, precondition?: Precondition): Promise<User | undefined> {
    return this.adminRules.auditingRefusal(caller, this.removeOnce(caller, id, precondition));
  }

  private removeOnce(
    caller: Caller,
    id: string,
    precondition?: Precondition,
  ): Promise<User | undefined> {
    return this.db.transaction(async (tx) => {
      const { manager } = tx;
      if (!isId('user', id)) {
        throw NotFound('User');
      }
      // any live user may be an ADMIN: take the last-admin lock before the row's
      await this.adminRules.lock(manager);
      const entity = await this.users.lockedRow(manager, id);
      if (!entity) {
        throw NotFound('User');
      }
      requireSelfOrAdmin(caller, id);
      if (caller.method === 'oauth' && !caller.scopes?.includes('admin')) {
        throw Forbidden('A partner app needs the admin scope to delete a user');
      }
      if (entity.deletedAt !== null) {
        return undefined;
      }
      const current = userFromEntity(entity);
      if (precondition && !precondition(current)) {
        throw PreconditionFailed();
      }
      if (entity.role === Role.ADMIN) {
        await this.adminRules.requireAnotherAdmin(manager, id, {});
      }
      const deletedAt = nowIso();
      await this.users.update(manager, id, { deletedAt, oauthValidAfter: deletedAt });
      await this.oauthArtifacts.endSignIns(manager, id);
      await this.changes.record(tx, { type: 'user.deleted', user: current, actor: caller });
      return current;
    });
  }

  /** One change of a user inside `tx` (PATCH, PUT, updateUser, a batch `update`). */
  async applyUpdate(
    tx: TxContext,
    caller: Caller,
    id: string,
    patch: PatchUserInput,
    precondition?: Precondition,
  ): Promise<User> {
    if (patch.role !== undefined && patch.role !== Role.ADMIN && isId('user', id)) {
      // may demote an ADMIN: take the last-admin lock before the row's
      await this.adminRules.lock(tx.manager);
    }
    const entity = isId('user', id) ? await this.users.lockedRow(tx.manager, id) : null;
    if (!entity || entity.deletedAt !== null) {
      throw NotFound('User');
    }
    requireSelfOrAdmin(caller, id);
    partnerAppMayPatch(caller, patch, entity);
    if (patch.role !== undefined && patch.role !== entity.role && !isAdmin(caller)) {
      throw Forbidden('Only administrators can change a role');
    }
    const current = userFromEntity(entity);
    if (precondition && !precondition(current)) {
      throw PreconditionFailed();
    }
    if (entity.role === Role.ADMIN && patch.role !== undefined && patch.role !== Role.ADMIN) {
      await this.adminRules.requireAnotherAdmin(tx.manager, id, {
        role: [entity.role, patch.role],
      });
    }
    const changes: Partial<UserEntity> = {};
    if (patch.name !== undefined) {
      changes.name = patch.name;
    }
    if (patch.email !== undefined) {
      changes.email = patch.email;
      changes.emailNormalized = patch.email.toLowerCase();
    }
    if (patch.role !== undefined && patch.role !== entity.role) {
      changes.role = patch.role;
    }
    if (patch.age !== undefined) {
      changes.age = patch.age;
    }
    changes.updatedAt = laterThan(entity.updatedAt);
    if (patch.password !== undefined) {
      // a new password ends every session (docs/data-integrity.md): refresh tokens are deleted with
      // the change, and access tokens issued before it are refused from now on
      changes.passwordHash = await this.records.hashPassword(patch.password);
      changes.tokensValidAfter = changes.updatedAt;
      await this.refreshTokens.revokeUser(tx.manager, id);
    }
    if (
      patch.password !== undefined ||
      (changes.role !== undefined && !roleAtLeast(changes.role, entity.role))
    ) {
      // a new password or a demotion also ends the user's partner-app sign-ins: /oauth sessions,
      // codes and refresh tokens go, access tokens issued before now are refused (the grants stay)
      changes.oauthValidAfter = changes.updatedAt;
      await this.oauthArtifacts.endSignIns(tx.manager, id);
    }
    await this.records.update(tx, id, changes);
    const updated = userFromEntity({ ...entity, ...changes });
    await this.changes.record(tx, {
      type: 'user.updated',
      before: current,
      after: updated,
      passwordChanged: changes.passwordHash !== undefined,
      actor: caller,
    });
    return updated;
  }
}
