import { randomBytes } from 'node:crypto';
import { Inject, Injectable } from '@nestjs/common';
import { APP_CONFIG, type AppConfig } from '../../config/config.js';
import { ulid } from 'ulid';
import {
  Conflict,
  Forbidden,
  NotFound,
  PreconditionFailed,
  ValidationFailed,
  type ErrorDetail,
} from '../../common/errors.js';
import type { RestPrecondition } from '../../common/rest-precondition.js';
import { nowIso } from '../../common/ids.js';
import { parseListQuery, type ListSpec, type Page } from '../../common/list-query.js';
import { isAdmin, type Caller } from '../../identity/caller.js';
import { sha256 } from '../../identity/token.service.js';
import type {
  CreateOAuthClientInput,
  OAuthClientBranding,
  UpdateOAuthClientInput,
} from './oauth-client.inputs.js';
import { ChangeRecord } from '../../changes/change-record.js';
import { DatabaseService } from '../../database/database.service.js';
import type { CreatedOAuthClientResponse, OAuthClientResponse } from './oauth.responses.js';
import { OAuthArtifactsRepository } from '../../identity/oauth-artifacts.repository.js';
import { OAuthClientsRepository, type OAuthClientRecord } from './oauth-clients.repository.js';

/** The REST representation of a client (`client_secret` only in the creation response). */
export type OAuthClientBody = OAuthClientResponse;

export const OAUTH_CLIENT_LIST_SPEC: ListSpec<never> = {
  sortFields: ['created_at'],
  defaultSort: [{ field: 'created_at', desc: false }],
  filters: {},
};

const LOOPBACK = new Set(['127.0.0.1', '[::1]', 'localhost']);

/** Why a redirect URI is refused, or undefined when it is acceptable. */
function redirectUriProblem(raw: string): string | undefined {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return 'must be an absolute URI';
  }
  if (raw.includes('#')) {
    return 'must not contain a fragment';
  }
  if (url.username || url.password) {
    return 'must not contain user information';
  }
  if (url.protocol === 'https:') {
    return undefined;
  }
  if (url.protocol === 'http:' && LOOPBACK.has(url.hostname)) {
    return undefined;
  }
  return 'must use https (http is allowed only on a loopback host: 127.0.0.1, [::1], localhost)';
}

function toClientBody(client: OAuthClientRecord): OAuthClientBody {
  return {
    client_id: client.clientId,
    name: client.name,
    redirect_uris: client.redirectUris,
    scopes: client.scopes,
    public: client.isPublic,
    logo_uri: client.logoUri,
    client_uri: client.clientUri,
    policy_uri: client.policyUri,
    tos_uri: client.tosUri,
    created_at: client.createdAt,
    updated_at: client.updatedAt ?? client.createdAt,
  };
}

const BRANDING = ['logo_uri', 'client_uri', 'policy_uri', 'tos_uri'] as const;

/** Why a branding URL is refused: it must be an absolute https URL without user information. */
function brandingUriProblem(raw: string): string | undefined {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return 'must be an absolute https URL';
  }
  if (url.protocol !== 'https:') {
    return 'must use https';
  }
  if (url.username || url.password) {
    return 'must not contain user information';
  }
  return undefined;
}

function redirectUriDetails(uris: readonly string[], details: ErrorDetail[]): void {
  uris.forEach((uri, i) => {
    const problem = redirectUriProblem(uri);
    if (problem) {
      details.push({ field: `redirect_uris.${i}`, message: `redirect_uris.${i} ${problem}` });
    }
  });
}

function brandingDetails(input: OAuthClientBranding, details: ErrorDetail[]): void {
  for (const member of BRANDING) {
    const value = input[member];
    const problem = typeof value === 'string' ? brandingUriProblem(value) : undefined;
    if (problem) {
      details.push({ field: member, message: `${member} ${problem}` });
    }
  }
}

function newSecret(): string {
  return `acs_${randomBytes(32).toString('base64url')}`;
}

/**
 * The partner-app registry (ADMIN only). Confidential clients get a secret once, stored as its
 * SHA-256 (the secret is 256 random bits, so a slow hash adds nothing); deleting a client removes
 * every grant, code and refresh token it holds, which also stops its access tokens at once.
 */
/** The members a PATCH changed, in REST names: `{member: [old, new]}` (no secret is editable). */
function clientChanges(
  before: OAuthClientRecord,
  after: OAuthClientRecord,
): Record<string, [unknown, unknown]> {
  const members: [string, unknown, unknown][] = [
    ['name', before.name, after.name],
    ['redirect_uris', before.redirectUris, after.redirectUris],
    ['scopes', before.scopes, after.scopes],
    ['logo_uri', before.logoUri, after.logoUri],
    ['client_uri', before.clientUri, after.clientUri],
    ['policy_uri', before.policyUri, after.policyUri],
    ['tos_uri', before.tosUri, after.tosUri],
  ];
  const changes: Record<string, [unknown, unknown]> = {};
  for (const [member, old, now] of members) {
    if (JSON.stringify(old) !== JSON.stringify(now)) {
      changes[member] = [old, now];
    }
  }
  return changes;
}

@Injectable()
export class OAuthClientsService {
  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly clients: OAuthClientsRepository,
    private readonly artifacts: OAuthArtifactsRepository,
    private readonly db: DatabaseService,
    private readonly changes: ChangeRecord,
  ) {}

  private assertAdmin(caller: Caller): void {
    if (!isAdmin(caller)) {
      throw Forbidden('Only an ADMIN may manage OAuth clients');
    }
  }

  async create(caller: Caller, input: CreateOAuthClientInput): Promise<CreatedOAuthClientResponse> {
    this.assertAdmin(caller);
    const details: ErrorDetail[] = [];
    redirectUriDetails(input.redirect_uris, details);
    brandingDetails(input, details);
    if (details.length > 0) {
      throw ValidationFailed(details);
    }
    const isPublic = input.public ?? false;
    const secret = isPublic ? undefined : newSecret();
    const record: OAuthClientRecord = {
      clientId: `cli_${ulid()}`,
      name: input.name,
      redirectUris: [...new Set(input.redirect_uris)],
      scopes: [...new Set(input.scopes)],
      isPublic,
      secretHash: secret ? sha256(secret) : null,
      createdBy: caller.userId,
      createdAt: nowIso(),
      logoUri: input.logo_uri ?? null,
      clientUri: input.client_uri ?? null,
      policyUri: input.policy_uri ?? null,
      tosUri: input.tos_uri ?? null,
      updatedAt: null,
      previousSecretHash: null,
      previousSecretExpiresAt: null,
    };
    await this.db.transaction(async (tx) => {
      const { manager } = tx;
      await this.clients.insert(record, manager);
      await this.changes.record(tx, {
        type: 'oauth_client.created',
        clientId: record.clientId,
        members: {
          name: [null, record.name],
          redirect_uris: [null, record.redirectUris],
          scopes: [null, record.scopes],
          public: [null, record.isPublic],
        },
        actor: caller,
      });
    });
    return { ...toClientBody(record), ...(secret ? { client_secret: secret } : {}) };
  }

  async list(caller: Caller, rawQuery: Record<string, unknown>): Promise<Page<OAuthClientBody>> {
    this.assertAdmin(caller);
    const query = parseListQuery(rawQuery, OAUTH_CLIENT_LIST_SPEC);
    const page = await this.clients.page(query);
    return { data: page.data.map(toClientBody), meta: page.meta };
  }

  async get(caller: Caller, clientId: string): Promise<OAuthClientBody> {
    this.assertAdmin(caller);
    const client = await this.clients.find(clientId);
    if (!client) {
      throw NotFound('OAuth client');
    }
    return toClientBody(client);
  }

  private async found(clientId: string): Promise<OAuthClientRecord> {
    const client = await this.clients.find(clientId);
    if (!client) {
      throw NotFound('OAuth client');
    }
    return client;
  }

  /**
   * PATCH: the members sent replace the registered ones (a branding member set to null is
   * removed). Scopes dropped from the client end every refresh token and code that carries one, and
   * its access tokens carrying one are refused from now on (oauth-token.verifier.ts); grants stay.
   * The client is read locked in the change's transaction: `If-Match` (`precondition`) is compared
   * with it, and two concurrent edits apply one after the other.
   */
  async update(
    caller: Caller,
    clientId: string,
    input: UpdateOAuthClientInput,
    precondition?: RestPrecondition<OAuthClientBody>,
  ): Promise<OAuthClientBody> {
    this.assertAdmin(caller);
    await this.found(clientId);
    const details: ErrorDetail[] = [];
    for (const member of ['name', 'redirect_uris', 'scopes'] as const) {
      if (input[member] === null) {
        details.push({ field: member, message: `${member} cannot be null` });
      }
    }
    if (input.redirect_uris) {
      redirectUriDetails(input.redirect_uris, details);
    }
    brandingDetails(input, details);
    if (details.length > 0) {
      throw ValidationFailed(details);
    }
    const { client, updated } = await this.db.transaction(async (tx) => {
      const { manager } = tx;
      const client = await this.clients.findLocked(manager, clientId);
      if (!client) {
        throw NotFound('OAuth client');
      }
      if (precondition && !precondition(toClientBody(client))) {
        throw PreconditionFailed();
      }
      const updated: OAuthClientRecord = {
        ...client,
        name: input.name ?? client.name,
        redirectUris: input.redirect_uris ? [...new Set(input.redirect_uris)] : client.redirectUris,
        scopes: input.scopes ? [...new Set(input.scopes)] : client.scopes,
        logoUri: input.logo_uri === undefined ? client.logoUri : input.logo_uri,
        clientUri: input.client_uri === undefined ? client.clientUri : input.client_uri,
        policyUri: input.policy_uri === undefined ? client.policyUri : input.policy_uri,
        tosUri: input.tos_uri === undefined ? client.tosUri : input.tos_uri,
        updatedAt: nowIso(),
      };
      if (!(await this.clients.update(updated, manager))) {
        throw NotFound('OAuth client');
      }
      await this.changes.record(tx, {
        type: 'oauth_client.updated',
        clientId,
        members: clientChanges(client, updated),
        actor: caller,
      });
      return { client, updated };
    });
    const dropped = client.scopes.filter((s) => !updated.scopes.includes(s));
    if (dropped.length > 0) {
      await this.artifacts.revokeClientTokensWith(clientId, dropped);
    }
    return toClientBody(updated);
  }

  /**
   * A new secret for a confidential client, shown in this answer only. The previous one keeps
   * working for OAUTH_SECRET_OVERLAP_S (a secret rotated before that window ended stops at once: at
   * most two secrets work at a time). A public client has no secret: 409.
   */
  async rotateSecret(caller: Caller, clientId: string): Promise<CreatedOAuthClientResponse> {
    this.assertAdmin(caller);
    const client = await this.found(clientId);
    if (client.isPublic || client.secretHash === null) {
      throw Conflict('A public client has no secret to rotate');
    }
    const secret = newSecret();
    const overlapS = this.config.oauthSecretOverlapS;
    const updated: OAuthClientRecord = {
      ...client,
      secretHash: sha256(secret),
      previousSecretHash: overlapS > 0 ? client.secretHash : null,
      previousSecretExpiresAt:
        overlapS > 0 ? new Date(Date.now() + overlapS * 1000).toISOString() : null,
      updatedAt: nowIso(),
    };
    await this.db.transaction(async (tx) => {
      const { manager } = tx;
      if (!(await this.clients.update(updated, manager))) {
        throw NotFound('OAuth client');
      }
      // the secret itself is never recorded: only that it was rotated, and until when the old one works
      await this.changes.record(tx, {
        type: 'oauth_client.secret_rotated',
        clientId,
        previousSecretExpiresAt: [client.previousSecretExpiresAt, updated.previousSecretExpiresAt],
        actor: caller,
      });
    });
    return { ...toClientBody(updated), client_secret: secret };
  }

  /**
   * Idempotent: deleting an unknown or already deleted client is a no-op. `If-Match`
   * (`precondition`) is compared with the client before anything is revoked, and again with the
   * client read locked in the deleting transaction.
   */
  async delete(
    caller: Caller,
    clientId: string,
    precondition?: RestPrecondition<OAuthClientBody>,
  ): Promise<void> {
    this.assertAdmin(caller);
    const matches = (client: OAuthClientRecord | undefined) =>
      !client || !precondition || precondition(toClientBody(client));
    if (!matches(await this.clients.find(clientId))) {
      throw PreconditionFailed();
    }
    // artefacts first: a token request racing this one cannot find a grant without its client
    await this.artifacts.revokeClient(clientId);
    await this.db.transaction(async (tx) => {
      const { manager } = tx;
      if (precondition && !matches(await this.clients.findLocked(manager, clientId))) {
        throw PreconditionFailed();
      }
      if (await this.clients.delete(clientId, manager)) {
        await this.changes.record(tx, { type: 'oauth_client.deleted', clientId, actor: caller });
      }
    });
    await this.artifacts.revokeClient(clientId);
  }
}
