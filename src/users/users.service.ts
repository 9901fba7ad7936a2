import { OAuthArtifactsRepository } from '../identity/oauth-artifacts.repository.js';
import { Inject, Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { hasRole, isAdmin, type Caller, type MaybeCaller } from '../identity/caller.js';
import { hashPassword } from '../identity/passwords.js';
import { Role, roleAtLeast } from '../identity/role.js';
import {
  Conflict,
  DomainError,
  Forbidden,
  NotFound,
  PreconditionFailed,
  Unauthorized,
} from '../common/errors.js';
import { isId, newId, nowIso } from '../common/ids.js';
import { APP_CONFIG, type AppConfig } from '../config/config.js';
import { parseListQuery, type ListSpec, type Page } from '../common/list-query.js';
import { validateInput } from '../common/validation.js';
import { CountersRepository, CountKeys } from '../database/counters.repository.js';
import { DatabaseService, type TxContext } from '../database/database.service.js';
import { RefreshTokensRepository } from '../database/refresh-tokens.repository.js';
import { EventsService } from '../events/events.service.js';
import { webhookUserObject } from './webhook-objects.js';
import { WebhookOutbox } from '../outbox/webhook-outbox.js';
import { AuditService } from '../audit/audit.service.js';
import { UserSearchService } from './user-search.service.js';
import { MAX_BATCH } from './dto/batch.input.js';
import {
  CreateUserInput,
  PatchUserInput,
  ReplaceUserInput,
  type RegisterInput,
} from './dto/user.inputs.js';
import type { User } from './user.js';
import type { UserEntity } from './user.entity.js';
import { userFromEntity } from './users.mapper.js';
import { UsersRepository, type UserPageQuery } from './users.repository.js';

export type { UserOrderField, UserPageQuery } from './users.repository.js';

export const USER_LIST_SPEC: ListSpec<'role'> = {
  sortFields: ['created_at', 'updated_at', 'name'],
  defaultSort: [{ field: 'created_at', desc: false }],
  filters: { role: [Role.ADMIN, Role.USER, Role.GUEST] },
  parameters: {
    q: {
      description:
        'Search: every word must be the start of a word of the name, or (ADMIN callers only) the start of the email; case-insensitive. Results newest first, paged by `page`/`limit` (no `sort` or `cursor` with `q`). Empty -> 400.',
      schema: { type: 'string', minLength: 1, maxLength: 200 },
    },
  },
};

/** Checked against the stored user inside the write transaction (If-Match); false -> 412. */
export type Precondition = (current: User) => boolean;

/** The 409 of the last-admin rule (docs/contract.md, "The last ADMIN"). */
export const LAST_ADMIN_MESSAGE = 'the last administrator cannot be removed';

/** What the boot did about ADMIN_EMAIL (AdminBootstrap logs it). */
export type EnsureAdminOutcome =
  | { kind: 'exists' }
  | { kind: 'created'; userId: string }
  | { kind: 'promoted'; userId: string; passwordSet: boolean };

export interface BatchResult {
  op: 'create' | 'update';
  status: 200 | 201;
  user: User;
}

/** The one place the users rules live; REST and GraphQL both call these methods. */
@Injectable()
export class UsersService {
  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly db: DatabaseService,
    private readonly events: EventsService,
    private readonly refreshTokens: RefreshTokensRepository,
    private readonly counters: CountersRepository,
    private readonly users: UsersRepository,
    private readonly oauthArtifacts: OAuthArtifactsRepository,
    private readonly outbox: WebhookOutbox,
    private readonly audit: AuditService,
    private readonly userSearch: UserSearchService,
  ) {}

  // ---- reads -------------------------------------------------------------------------------

  /** A live user or undefined (malformed ids are simply unknown). */
  async findById(id: string): Promise<User | undefined> {
    if (!isId('user', id)) {
      return undefined;
    }
    return this.users.findById(id);
  }

  /** Live users by id, in one statement (DataLoader batches land here). */
  async findByIds(ids: readonly string[]): Promise<User[]> {
    const valid = ids.filter((id) => isId('user', id));
    return this.users.findByIds(valid);
  }

  async get(caller: Caller, id: string): Promise<User> {
    this.requireRead(caller);
    const user = await this.findById(id);
    if (!user) {
      throw NotFound('User');
    }
    return user;
  }

  /** REST list: page number or keyset cursor; the total from the counters (O(1)). */
  async list(caller: Caller, rawQuery: Record<string, unknown>): Promise<Page<User>> {
    this.requireRead(caller);
    const query = parseListQuery(rawQuery, USER_LIST_SPEC);
    if (rawQuery.q !== undefined) {
      return this.userSearch.searchList(caller, rawQuery, query);
    }
    const role = query.filters.role as Role | undefined;
    return this.users.list(
      query,
      role,
      this.counters.get(role ? CountKeys.usersByRole(role) : CountKeys.users()),
    );
  }

  /** Keyset page for connections: rows in scan order, at most window.size + 1 (to detect more). */
  async page(caller: MaybeCaller, q: UserPageQuery): Promise<User[]> {
    this.requireRead(caller);
    return this.users.page(q);
  }

  /** Live users matching the page's filter: one counter read (CountersRepository). */
  async count(caller: MaybeCaller, q: Pick<UserPageQuery, 'role'>): Promise<number> {
    this.requireRead(caller);
    return this.counters.get(q.role ? CountKeys.usersByRole(q.role) : CountKeys.users());
  }

  /** Is there a live user at or before (`upto`) / at or after (`from`) a keyset position? */
  async existsAround(
    caller: MaybeCaller,
    q: Omit<UserPageQuery, 'window'>,
    position: [unknown, string],
    side: 'upto' | 'from',
  ): Promise<boolean> {
    this.requireRead(caller);
    return this.users.existsAround(q, position, side);
  }

  /** One administrator by its user id (`node(id: "adm_…")`): ADMIN only, like the `admins` query. */
  async admin(caller: MaybeCaller, userId: string): Promise<User> {
    this.requireAdmin(caller, 'Only administrators can see administrators');
    const user = await this.findById(userId);
    if (!user || user.role !== Role.ADMIN) {
      throw NotFound('Admin');
    }
    return user;
  }

  /** Live users of a role (the `admins` query). */
  async byRole(caller: MaybeCaller, role: Role, limit = 100): Promise<User[]> {
    this.requireRead(caller);
    return this.users.byRole(role, limit);
  }

  /** Users whose name words start with every one of `words` (search-query.ts), newest first. */
  async search(caller: MaybeCaller, words: readonly string[], limit: number): Promise<User[]> {
    this.requireRead(caller);
    return this.users.search(words, limit);
  }

  // ---- writes ------------------------------------------------------------------------------

  async create(caller: Caller, input: CreateUserInput): Promise<User> {
    this.requireAdmin(caller, 'Only administrators can create users');
    refuseAccountFieldsToApps(caller, 'create users');
    return this.db.transaction((tx) => this.insertAudited(tx, caller, input));
  }

  /** POST /auth/register: anyone may create a USER for themself. */
  async register(input: RegisterInput): Promise<User> {
    return this.db.transaction((tx) => this.insert(tx, { ...input, role: Role.USER }));
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
        const created = await this.insert(tx, {
          name: 'Administrator',
          email,
          password,
          role: Role.ADMIN,
        });
        return { kind: 'created', userId: created.id };
      }
      const changes: Partial<UserEntity> = {
        role: Role.ADMIN,
        updatedAt: laterThan(entity.updatedAt),
      };
      if (entity.passwordHash === null) {
        changes.passwordHash = await hashPassword(password, this.config.passwordHashProfile);
      }
      await this.users.update(manager, entity.id, changes);
      this.counters.add(tx, {
        [CountKeys.usersByRole(entity.role)]: -1,
        [CountKeys.usersByRole(Role.ADMIN)]: 1,
      });
      await this.audit.record(manager, {
        actor: 'system',
        action: 'admin.promoted_at_boot',
        target: { type: 'user', id: entity.id },
        changes: { role: [entity.role, Role.ADMIN] },
      });
      const promoted = userFromEntity({ ...entity, ...changes });
      tx.afterCommit(() => this.events.userUpdated(promoted));
      await this.outbox.enqueue(tx, 'user.updated', webhookUserObject(promoted), promoted.id);
      return {
        kind: 'promoted',
        userId: entity.id,
        passwordSet: changes.passwordHash !== undefined,
      };
    });
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
    return this.auditingRefusal(
      caller,
      this.db.transaction((tx) => this.applyUpdate(tx, caller, id, patch, precondition)),
    );
  }

  /** Soft delete; deleting an already deleted user succeeds again (idempotent). */
  async remove(caller: Caller, id: string, precondition?: Precondition): Promise<User | undefined> {
    return this.auditingRefusal(caller, this.removeOnce(caller, id, precondition));
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
      await this.users.lockAdmins(manager);
      const entity = await this.users.lockedRow(manager, id);
      if (!entity) {
        throw NotFound('User');
      }
      this.requireSelfOrAdmin(caller, id);
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
        await this.requireAnotherAdmin(manager, id, {});
      }
      const deletedAt = nowIso();
      await this.users.update(manager, id, { deletedAt, oauthValidAfter: deletedAt });
      await this.oauthArtifacts.endSignIns(manager, id);
      this.counters.add(tx, { [CountKeys.users()]: -1, [CountKeys.usersByRole(entity.role)]: -1 });
      await this.outbox.enqueue(tx, 'user.deleted', { id }, id);
      await this.counters.forgetOrdersOfUser(tx, id);
      await this.audit.record(manager, {
        actor: caller,
        action: 'user.deleted',
        target: { type: 'user', id },
      });
      return current;
    });
  }

  /**
   * POST /users/batch and bulkCreate: every operation in one transaction, all or nothing. The first
   * failing operation decides the status; its details carry its index.
   */
  async batch(caller: Caller, operations: unknown[]): Promise<BatchResult[]> {
    this.requireRead(caller);
    if (operations.length > MAX_BATCH) {
      throw new DomainError('validation_failed', `At most ${MAX_BATCH} operations`, [
        { field: 'operations', message: `operations must contain at most ${MAX_BATCH} elements` },
      ]);
    }
    let refused: LastAdminRefusal | undefined;
    const done = this.db.transaction(async (tx) => {
      // before any operation locks a user row (a later demotion would wait for the lock holding it)
      if (operations.some(setsRole)) {
        await this.users.lockAdmins(tx.manager);
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
        await this.recordRefusal(caller, refused);
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
      this.requireAdmin(caller, 'Only administrators can create users');
      refuseAccountFieldsToApps(caller, 'create users');
      const input = await validateInput(CreateUserInput, op.data);
      return { op: 'create', status: 201, user: await this.insertAudited(tx, caller, input) };
    }
    if (typeof op.id !== 'string') {
      throw new DomainError('validation_failed', 'Invalid operation', [
        { field: 'id', message: 'id is required for update' },
      ]);
    }
    const patch = await validateInput(PatchUserInput, op.data);
    return { op: 'update', status: 200, user: await this.applyUpdate(tx, caller, op.id, patch) };
  }

  // ---- internals ---------------------------------------------------------------------------

  private async insert(tx: TxContext, input: CreateUserInput): Promise<User> {
    const now = nowIso();
    const entity: UserEntity = {
      id: newId('user'),
      name: input.name,
      email: input.email ?? null,
      emailNormalized: input.email ? input.email.toLowerCase() : null,
      role: input.role ?? Role.USER,
      age: input.age ?? null,
      passwordHash: input.password
        ? await hashPassword(input.password, this.config.passwordHashProfile)
        : null,
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

  private async applyUpdate(
    tx: TxContext,
    caller: Caller,
    id: string,
    patch: PatchUserInput,
    precondition?: Precondition,
  ): Promise<User> {
    if (patch.role !== undefined && patch.role !== Role.ADMIN && isId('user', id)) {
      // may demote an ADMIN: take the last-admin lock before the row's
      await this.users.lockAdmins(tx.manager);
    }
    const entity = isId('user', id) ? await this.users.lockedRow(tx.manager, id) : null;
    if (!entity || entity.deletedAt !== null) {
      throw NotFound('User');
    }
    this.requireSelfOrAdmin(caller, id);
    partnerAppMayPatch(caller, patch, entity);
    if (patch.role !== undefined && patch.role !== entity.role && !isAdmin(caller)) {
      throw Forbidden('Only administrators can change a role');
    }
    const current = userFromEntity(entity);
    if (precondition && !precondition(current)) {
      throw PreconditionFailed();
    }
    if (entity.role === Role.ADMIN && patch.role !== undefined && patch.role !== Role.ADMIN) {
      await this.requireAnotherAdmin(tx.manager, id, { role: [entity.role, patch.role] });
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
      this.counters.add(tx, {
        [CountKeys.usersByRole(entity.role)]: -1,
        [CountKeys.usersByRole(patch.role)]: 1,
      });
    }
    if (patch.age !== undefined) {
      changes.age = patch.age;
    }
    changes.updatedAt = laterThan(entity.updatedAt);
    if (patch.password !== undefined) {
      // a new password ends every session (docs/data-integrity.md): refresh tokens are deleted with
      // the change, and access tokens issued before it are refused from now on
      changes.passwordHash = await hashPassword(patch.password, this.config.passwordHashProfile);
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
    await this.writeGuarded(() => this.users.update(tx.manager, id, changes));
    if (changes.role !== undefined) {
      await this.audit.record(tx.manager, {
        actor: caller,
        action: 'user.role_changed',
        target: { type: 'user', id },
        changes: { role: [entity.role, changes.role] },
      });
    }
    if (changes.passwordHash !== undefined && isAdmin(caller)) {
      await this.audit.record(tx.manager, {
        actor: caller,
        action: 'user.password_set',
        target: { type: 'user', id },
      });
    }
    const updated = userFromEntity({ ...entity, ...changes });
    tx.afterCommit(() => this.events.userUpdated(updated));
    await this.outbox.enqueue(tx, 'user.updated', webhookUserObject(updated), updated.id);
    return updated;
  }

  /** A user created by an ADMIN (POST /users, batch, GraphQL): audited in the same transaction. */
  private async insertAudited(
    tx: TxContext,
    caller: Caller,
    input: CreateUserInput,
  ): Promise<User> {
    const user = await this.insert(tx, input);
    await this.audit.record(tx.manager, {
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

  /** A last-admin refusal rolled its change back: it is audited on its own (admin.removal_refused). */
  private auditingRefusal<T>(caller: Caller, work: Promise<T>): Promise<T> {
    return work.catch(async (err: unknown) => {
      if (err instanceof LastAdminRefusal) {
        await this.recordRefusal(caller, err);
      }
      throw err;
    });
  }

  private async recordRefusal(caller: Caller, refusal: LastAdminRefusal): Promise<void> {
    await this.audit.recordAlone({
      actor: caller,
      action: 'admin.removal_refused',
      target: { type: 'user', id: refusal.userId },
      changes: refusal.changes,
    });
  }

  /** 409 unless a live ADMIN other than `id` exists (call with the last-admin lock held). */
  private async requireAnotherAdmin(
    manager: EntityManager,
    id: string,
    refused: Record<string, [unknown, unknown]>,
  ): Promise<void> {
    if (!(await this.users.liveAdminExists(manager, id))) {
      throw new LastAdminRefusal(id, refused);
    }
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

  private requireRead(caller: MaybeCaller): asserts caller is Caller {
    if (!caller) {
      throw Unauthorized();
    }
  }

  private requireAdmin(caller: MaybeCaller, message: string): void {
    this.requireRead(caller);
    if (!isAdmin(caller)) {
      throw Forbidden(message);
    }
  }

  /** USER may change only themself; GUEST nothing; ADMIN anyone (docs/contract.md section 7). */
  private requireSelfOrAdmin(caller: Caller, id: string): void {
    if (isAdmin(caller)) {
      return;
    }
    if (!hasRole(caller, Role.USER) || caller.userId !== id) {
      throw Forbidden('You may only change your own user');
    }
  }
}

/**
 * What a partner app (an OAuth access token) may never do, whatever its scopes: set anyone's email,
 * password or role, which creating a user does (docs/oauth.md "What each scope allows").
 */
function refuseAccountFieldsToApps(caller: Caller, what: string): void {
  if (caller.method === 'oauth') {
    throw Forbidden(`A partner app cannot ${what}: email, password and role stay first-party`);
  }
}

/**
 * A partner app's change to a user (docs/oauth.md): never an email, password or role (a PUT may
 * repeat the current values); without the `admin` scope only the profile name (its token acts at
 * USER rank, so only on its own user); with it also the age, of any user.
 */
function partnerAppMayPatch(caller: Caller, patch: PatchUserInput, current: UserEntity): void {
  if (caller.method !== 'oauth') {
    return;
  }
  const changes = (member: keyof PatchUserInput, value: unknown) =>
    patch[member] !== undefined && patch[member] !== value;
  if (
    patch.password !== undefined ||
    changes('email', current.email) ||
    changes('role', current.role)
  ) {
    throw Forbidden('A partner app cannot change an email, password or role');
  }
  if (!caller.scopes?.includes('admin') && changes('age', current.age)) {
    throw Forbidden('The users:write scope changes the profile name only');
  }
}

/** The last-admin 409, carrying what was refused for the audit log. */
class LastAdminRefusal extends DomainError {
  constructor(
    readonly userId: string,
    readonly changes: Record<string, [unknown, unknown]>,
  ) {
    super('conflict', LAST_ADMIN_MESSAGE);
  }
}

/** A timestamp strictly after `previous` (two updates in one millisecond still change the ETag). */
function laterThan(previous: string): string {
  const now = nowIso();
  return now > previous ? now : new Date(Date.parse(previous) + 1).toISOString();
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
