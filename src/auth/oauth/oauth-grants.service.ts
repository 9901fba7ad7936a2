import { Injectable } from '@nestjs/common';
import type { Caller } from '../../identity/caller.js';
import { ChangeRecord } from '../../changes/change-record.js';
import { DatabaseService } from '../../database/database.service.js';
import {
  OAuthArtifactsRepository,
  type GrantRow,
} from '../../identity/oauth-artifacts.repository.js';
import { OAuthClientsRepository } from './oauth-clients.repository.js';
import type { AuthorizedAppResponse } from './oauth.responses.js';

/** One app the user authorized, as `GET /api/v1/oauth/grants` lists it. */
export type AuthorizedApp = AuthorizedAppResponse;

export function scopesOf(grant: GrantRow): string[] {
  const payload = grant.payload as {
    openid?: { scope?: string };
    resources?: Record<string, string>;
  };
  const all = [payload.openid?.scope ?? '', ...Object.values(payload.resources ?? {})]
    .join(' ')
    .split(' ')
    .filter((s) => s !== '');
  return [...new Set(all)];
}

/**
 * The apps a user has authorized (their OAuth grants) and their revocation. Revoking removes the
 * grants with their codes and refresh tokens; the access tokens issued under them stop working on
 * the next request, on every instance, because each request checks its grant (docs/oauth.md).
 */
@Injectable()
export class OAuthGrantsService {
  constructor(
    private readonly artifacts: OAuthArtifactsRepository,
    private readonly clients: OAuthClientsRepository,
    private readonly db: DatabaseService,
    private readonly changes: ChangeRecord,
  ) {}

  async list(caller: Caller): Promise<AuthorizedApp[]> {
    const grants = await this.artifacts.grantsOf(caller.userId);
    const clients = new Map(
      (await this.clients.findMany([...new Set(grants.map((g) => g.clientId))])).map((c) => [
        c.clientId,
        c,
      ]),
    );
    const apps = new Map<string, AuthorizedApp>();
    for (const grant of grants) {
      const client = clients.get(grant.clientId);
      if (!client) {
        continue;
      }
      const iat = Number((grant.payload as { iat?: number }).iat ?? 0);
      const grantedAt = new Date(iat * 1000).toISOString();
      const app = apps.get(grant.clientId);
      if (app) {
        app.scopes = [...new Set([...app.scopes, ...scopesOf(grant)])];
        app.granted_at = app.granted_at < grantedAt ? app.granted_at : grantedAt;
      } else {
        apps.set(grant.clientId, {
          client_id: grant.clientId,
          client_name: client.name,
          scopes: scopesOf(grant),
          granted_at: grantedAt,
        });
      }
    }
    return [...apps.values()].sort((a, b) => a.granted_at.localeCompare(b.granted_at));
  }

  /** Idempotent: an app that holds no grant of this user is a no-op. */
  async revoke(caller: Caller, clientId: string): Promise<void> {
    const grants = await this.artifacts.grantsOf(caller.userId, clientId);
    if (grants.length === 0) {
      return;
    }
    await this.db.transaction(async (tx) => {
      const { manager } = tx;
      for (const grant of grants) {
        await this.artifacts.revokeGrant(grant.id, manager);
      }
      await this.changes.record(tx, {
        type: 'oauth_grant.revoked',
        clientId,
        userId: caller.userId,
        scopes: [...new Set(grants.flatMap(scopesOf))],
        actor: caller,
      });
    });
  }
}
