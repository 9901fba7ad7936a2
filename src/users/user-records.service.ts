import { Inject, Injectable } from '@nestjs/common';
import type { Caller } from '../identity/caller.js';
import { hashPassword } from '../identity/passwords.js';
import { Role } from '../identity/role.js';
import { Conflict } from '../common/errors.js';
import { newId, nowIso } from '../common/ids.js';
import { APP_CONFIG, type AppConfig } from '../config/config.js';
import { CountersRepository, CountKeys } from '../database/counters.repository.js';
import { DatabaseService, type TxContext } from '../database/database.service.js';
import { EventsService } from '../events/events.service.js';
import { WebhookOutbox } from '../outbox/webhook-outbox.js';
import { AuditService } from '../audit/audit.service.js';
import type { CreateUserInput } from './dto/user.inputs.js';
import type { User } from './user.js';
import type { UserEntity } from './user.entity.js';
import { userFromEntity } from './users.mapper.js';
import { UsersRepository } from './users.repository.js';
import { webhookUserObject } from './webhook-objects.js';

/**
 * What every write of a user row brings along, inside the caller's transaction: the counters, the
 * webhook outbox, the `userUpdated` event after commit, the 409 of a taken email. Used by the
 * account changes (UserAccountsService) and the admin rules (AdminRulesService).
 */
@Injectable()
export class UserRecords {
  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly db: DatabaseService,
    private readonly events: EventsService,
    private readonly counters: CountersRepository,
    private readonly users: UsersRepository,
    private readonly outbox: WebhookOutbox,
    private readonly audit: AuditService,
  ) {}

  hashPassword(password: string): Promise<string> {
    return hashPassword(password, this.config.passwordHashProfile);
  }

  async insert(tx: TxContext, input: CreateUserInput): Promise<User> {
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
    this.counters.add(tx, { [CountKeys.users()]: 1, [CountKeys.usersByRole(entity.role)]: 1 });
    const created = userFromEntity(entity);
    await this.outbox.enqueue(tx, 'user.created', webhookUserObject(created), created.id);
    return created;
  }

  /** A user created by an ADMIN (POST /users, batch, GraphQL): audited in the same transaction. */
  async insertAudited(tx: TxContext, caller: Caller, input: CreateUserInput): Promise<User> {
    const user = await this.insert(tx, input);
    await this.audit.record(tx, {
      actor: caller,
      action: 'user.created',
      target: { type: 'user', id: user.id },
      changes: {
        name: [null, user.name],
        email: [null, user.email],
        role: [null, user.role],
        age: [null, user.age],
      },
    });
    return user;
  }

  /** `changes` written to the row; a taken email -> 409. */
  async update(tx: TxContext, id: string, changes: Partial<UserEntity>): Promise<void> {
    await this.writeGuarded(() => this.users.update(tx.manager, id, changes));
  }

  /** An updated user: `userUpdated` after commit, `user.updated` into the outbox. */
  async updated(tx: TxContext, user: User): Promise<void> {
    tx.afterCommit(() => this.events.userUpdated(user));
    await this.outbox.enqueue(tx, 'user.updated', webhookUserObject(user), user.id);
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
