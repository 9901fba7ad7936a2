import { Inject, Injectable } from '@nestjs/common';
import { hashPassword } from '../identity/passwords.js';
import { Role } from '../identity/role.js';
import { Conflict } from '../common/errors.js';
import { newId, nowIso } from '../common/ids.js';
import { APP_CONFIG, type AppConfig } from '../config/config.js';
import { ChangeRecord } from '../changes/change-record.js';
import type { ChangeActor } from '../changes/change.js';
import { DatabaseService, type TxContext } from '../database/database.service.js';
import type { CreateUserInput } from './dto/user.inputs.js';
import type { User } from '../domain/user.js';
import type { UserEntity } from './user.entity.js';
import { userFromEntity } from './users.mapper.js';
import { UsersRepository } from './users.repository.js';

/**
 * The writes of a user row, inside the caller's transaction: the insert and the update with the 409
 * of a taken email, and the change they record (whose subscribers count, audit, send the webhook and
 * publish `userUpdated`). Used by the account changes (UserAccountsService), the batch and the admin
 * rules (AdminRulesService).
 */
@Injectable()
export class UserRecords {
  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly db: DatabaseService,
    private readonly users: UsersRepository,
    private readonly changes: ChangeRecord,
  ) {}

  hashPassword(password: string): Promise<string> {
    return hashPassword(password, this.config.passwordHashProfile);
  }

  /**
   * A new user, created by `actor`: a caller (POST /users, batch, GraphQL: audited), nobody (a
   * registration) or the system (the boot's ADMIN).
   */
  async insert(tx: TxContext, input: CreateUserInput, actor: ChangeActor): Promise<User> {
    const now = nowIso();
    const entity: UserEntity = {
      id: newId('user'),
      name: input.name,
      email: input.email ?? null,
      emailNormalized: input.email ? input.email.toLowerCase() : null,
      role: input.role ?? Role.USER,
      age: input.age ?? null,
      passwordHash: input.password ? await this.hashPassword(input.password) : null,
      tokensValidAfter: null,
      oauthValidAfter: null,
      createdAt: now,
      updatedAt: now,
      deletedAt: null,
    };
    await this.writeGuarded(() => this.users.insert(tx.manager, entity));
    const created = userFromEntity(entity);
    await this.changes.record(tx, { type: 'user.created', user: created, actor });
    return created;
  }

  /** `changes` written to the row; a taken email -> 409. */
  async update(tx: TxContext, id: string, changes: Partial<UserEntity>): Promise<void> {
    await this.writeGuarded(() => this.users.update(tx.manager, id, changes));
  }

  private async writeGuarded<T>(write: () => Promise<T>): Promise<T> {
    try {
      return await write();
    } catch (err) {
      if (this.db.isUniqueViolation(err)) {
        throw Conflict('A user with this email already exists', [
          { field: 'email', message: 'email is already in use' },
        ]);
      }
      throw err;
    }
  }
}

/** A timestamp strictly after `previous` (two updates in one millisecond still change the ETag). */
export function laterThan(previous: string): string {
  const now = nowIso();
  return now > previous ? now : new Date(Date.parse(previous) + 1).toISOString();
}
