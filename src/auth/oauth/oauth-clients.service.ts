import { randomBytes } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { ulid } from 'ulid';
import { Forbidden, NotFound, ValidationFailed, type ErrorDetail } from '../../common/errors.js';
import { nowIso } from '../../common/ids.js';
import { parseListQuery, type ListSpec, type Page } from '../../common/list-query.js';
import { isAdmin, type Caller } from '../caller.js';
import { sha256 } from '../token.service.js';
import { AuditService } from '../../audit/audit.service.js';
import { DatabaseService } from '../../database/database.service.js';
import type { CreateOAuthClientInput } from './oauth-client.inputs.js';
import type { CreatedOAuthClientResponse, OAuthClientResponse } from './oauth.responses.js';
import { OAuthArtifactsRepository } from './oauth-artifacts.repository.js';
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
export function redirectUriProblem(raw: string): string | undefined {
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

export function toClientBody(client: OAuthClientRecord): OAuthClientBody {
  return {
    client_id: client.clientId,
    name: client.name,
    redirect_uris: client.redirectUris,
    scopes: client.scopes,
    public: client.isPublic,
    created_at: client.createdAt,
  };
}

/**
 * The partner-app registry (ADMIN only). Confidential clients get a secret once, stored as its
 * SHA-256 (the secret is 256 random bits, so a slow hash adds nothing); deleting a client removes
 * every grant, code and refresh token it holds, which also stops its access tokens at once.
 */
@Injectable()
export class OAuthClientsService {
  constructor(
    private readonly clients: OAuthClientsRepository,
    private readonly artifacts: OAuthArtifactsRepository,
    private readonly db: DatabaseService,
    private readonly audit: AuditService,
  ) {}

  private assertAdmin(caller: Caller): void {
    if (!isAdmin(caller)) {
      throw Forbidden('Only an ADMIN may manage OAuth clients');
    }
  }

  async create(caller: Caller, input: CreateOAuthClientInput): Promise<CreatedOAuthClientResponse> {
    this.assertAdmin(caller);
    const details: ErrorDetail[] = [];
    input.redirect_uris.forEach((uri, i) => {
      const problem = redirectUriProblem(uri);
      if (problem) {
        details.push({ field: `redirect_uris.${i}`, message: `redirect_uris.${i} ${problem}` });
      }
    });
    if (details.length > 0) {
      throw ValidationFailed(details);
    }
    const isPublic = input.public ?? false;
    const secret = isPublic ? undefined : `acs_${randomBytes(32).toString('base64url')}`;
    const record: OAuthClientRecord = {
      clientId: `cli_${ulid()}`,
      name: input.name,
      redirectUris: [...new Set(input.redirect_uris)],
      scopes: [...new Set(input.scopes)],
      isPublic,
      secretHash: secret ? sha256(secret) : null,
      createdBy: caller.userId,
      createdAt: nowIso(),
    };
    await this.db.transaction(async ({ manager }) => {
      await this.clients.insert(record, manager);
      await this.audit.record(manager, {
        actor: caller,
        action: 'oauth_client.created',
        target: { type: 'oauth_client', id: record.clientId },
        changes: {
          name: [null, record.name],
          redirect_uris: [null, record.redirectUris],
          scopes: [null, record.scopes],
          public: [null, record.isPublic],
        },
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

  /** Idempotent: deleting an unknown or already deleted client is a no-op. */
  async delete(caller: Caller, clientId: string): Promise<void> {
    this.assertAdmin(caller);
    // artefacts first: a token request racing this one cannot find a grant without its client
    await this.artifacts.revokeClient(clientId);
    await this.db.transaction(async ({ manager }) => {
      if (await this.clients.delete(clientId, manager)) {
        await this.audit.record(manager, {
          actor: caller,
          action: 'oauth_client.deleted',
          target: { type: 'oauth_client', id: clientId },
        });
      }
    });
    await this.artifacts.revokeClient(clientId);
  }
}
