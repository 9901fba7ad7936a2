import { Injectable } from '@nestjs/common';
import { isAdmin, type Caller } from '../../identity/caller.js';
import { Role, roleAtLeast, ROLES } from '../../identity/role.js';
import { Forbidden, NotFound, PreconditionFailed, ValidationFailed } from '../../common/errors.js';
import type { RestPrecondition } from '../../common/rest-precondition.js';
import { isId, newId, nowIso } from '../../common/ids.js';
import { parseListQuery, type ListSpec, type Page } from '../../common/list-query.js';
import { DatabaseService } from '../../database/database.service.js';
import { TokenService } from '../../identity/token.service.js';
import { ChangeRecord } from '../../changes/change-record.js';
import type { CreateApiKeyInput } from './api-key.inputs.js';
import type { ApiKeyResponse, CreatedApiKeyResponse } from './api-key.response.js';
import { ApiKeysRepository } from '../../identity/api-keys.repository.js';

export type ApiKey = ApiKeyResponse;

export const API_KEY_LIST_SPEC: ListSpec<never> = {
  sortFields: ['created_at'],
  defaultSort: [{ field: 'created_at', desc: false }],
  filters: {},
};

const PREFIX_LENGTH = 12;

/**
 * API keys: `atr_<random>` secrets shown once, stored as SHA-256 hashes. Owners manage their own
 * keys, ADMINs anyone's; a key's role is never above its owner's.
 *
 * A caller authenticated *by an API key* never exceeds that key (README, "API keys"):
 * - it sees and revokes only keys at or below its own (effective) role; stronger keys are 404;
 * - it creates keys at or below its own role, expiring no later than itself;
 * - a GUEST key (read-only) creates no keys and revokes none but itself.
 */
@Injectable()
export class ApiKeysService {
  constructor(
    private readonly db: DatabaseService,
    private readonly tokens: TokenService,
    private readonly keys: ApiKeysRepository,
    private readonly changes: ChangeRecord,
  ) {}

  async create(caller: Caller, input: CreateApiKeyInput): Promise<CreatedApiKeyResponse> {
    const byKey = caller.method === 'api_key';
    if (byKey && caller.role === Role.GUEST) {
      throw Forbidden('A GUEST API key cannot create API keys');
    }
    const role = input.role ?? caller.role;
    if (!roleAtLeast(caller.role, role)) {
      throw Forbidden(
        byKey
          ? `An API key cannot create a key with a higher role than its own (${caller.role})`
          : `An API key cannot have a higher role than its owner (${caller.role})`,
      );
    }
    let expiresAt = input.expires_at ? new Date(input.expires_at).toISOString() : null;
    if (expiresAt !== null && expiresAt <= nowIso()) {
      throw ValidationFailed([
        { field: 'expires_at', message: 'expires_at must be in the future' },
      ]);
    }
    if (byKey && caller.expiresAt !== undefined) {
      // a key made by an expiring key expires with it at the latest
      const limit = new Date(caller.expiresAt).toISOString();
      if (expiresAt !== null && expiresAt > limit) {
        throw Forbidden(`A key created by an API key cannot outlive it (expires ${limit})`);
      }
      expiresAt ??= limit;
    }
    const { token, hash } = this.tokens.newOpaqueToken('atr_');
    const key: ApiKey = {
      id: newId('apiKey'),
      user_id: caller.userId,
      name: input.name,
      prefix: token.slice(0, PREFIX_LENGTH),
      role,
      expires_at: expiresAt,
      last_used_at: null,
      revoked_at: null,
      created_at: nowIso(),
    };
    await this.db.transaction(async (tx) => {
      const { manager } = tx;
      await this.keys.insert(manager, key, hash);
      await this.changes.record(tx, { type: 'api_key.created', key, actor: caller });
    });
    return { ...key, key: token };
  }

  /** The caller's keys; an ADMIN sees every key. Revoked keys stay listed (with revoked_at). */
  async list(caller: Caller, rawQuery: Record<string, unknown>): Promise<Page<ApiKey>> {
    const query = parseListQuery(rawQuery, API_KEY_LIST_SPEC);
    const all = isAdmin(caller);
    const visible = visibleRoles(caller);
    const { rows, meta } = await this.keys.page(query, {
      userId: all ? undefined : caller.userId,
      roles: visible,
    });
    return { data: rows, meta };
  }

  async get(caller: Caller, id: string): Promise<ApiKey> {
    const key = isId('apiKey', id) ? await this.keys.find(id) : undefined;
    // another user's key is "not found" for a non-admin, and a key above an API-key caller's role
    // for that caller: its existence is not theirs to learn
    if (
      !key ||
      (key.user_id !== caller.userId && !isAdmin(caller)) ||
      !(visibleRoles(caller) ?? ROLES).includes(key.role)
    ) {
      throw NotFound('API key');
    }
    return key;
  }

  /**
   * Revocation is immediate and idempotent. `If-Match` (`precondition`) is compared with the key as
   * GET shows it, revoked or not (a revoked key is still a resource: a stale tag is 412 there too).
   */
  async revoke(caller: Caller, id: string, precondition?: RestPrecondition<ApiKey>): Promise<void> {
    const key = await this.get(caller, id);
    if (caller.method === 'api_key' && caller.role === Role.GUEST && key.id !== caller.keyId) {
      throw Forbidden('A GUEST API key can revoke only itself');
    }
    if (precondition && !precondition(key)) {
      throw PreconditionFailed();
    }
    if (key.revoked_at !== null) {
      return;
    }
    const revokedAt = nowIso();
    await this.db.transaction(async (tx) => {
      const { manager } = tx;
      await this.keys.revoke(manager, id, revokedAt);
      await this.changes.record(tx, {
        type: 'api_key.revoked',
        keyId: id,
        revokedAt,
        actor: caller,
      });
    });
  }
}

/** For a caller authenticated by an API key: the key roles it may see (its own and below). */
function visibleRoles(caller: Caller): Role[] | undefined {
  return caller.method === 'api_key'
    ? ROLES.filter((role) => roleAtLeast(caller.role, role))
    : undefined;
}
