import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { DatabaseService } from '../database/database.service.js';

/** What oidc-provider hands an adapter to store (the members this repository indexes). */
export interface ArtifactPayload {
  [key: string]: unknown;
  grantId?: string;
  uid?: string;
  clientId?: string;
  accountId?: string;
  consumed?: number;
}

interface ArtifactRow {
  payload: string;
  expires_at: number | string | null;
  consumed_at: number | string | null;
}

/** A grant as the user's "authorized apps" list shows it. */
export interface GrantRow {
  id: string;
  clientId: string;
  payload: ArtifactPayload;
}

/**
 * The one owner of `oauth_artifacts`: every oidc-provider artefact (sessions, interactions, grants,
 * codes, refresh tokens...) as JSON plus the columns it is looked up by. Expired rows are never
 * returned and are purged by `purgeExpired`.
 */
@Injectable()
export class OAuthArtifactsRepository {
  constructor(private readonly db: DatabaseService) {}

  private get p() {
    return (n: number) => this.db.p(n);
  }

  /**
   * A write through the database's write door (on SQLite, writes are queued so they never land
   * inside another caller's transaction). Returns the rows of a RETURNING clause on both dialects
   * (TypeORM answers an UPDATE on PostgreSQL with `[rows, count]`).
   */
  private async write<T>(sql: string, params: unknown[]): Promise<T[]> {
    const result = await this.db.transaction<T[] | [T[], number]>(({ manager }) =>
      manager.query(sql, params),
    );
    if (this.db.dialect === 'postgres' && Array.isArray(result[0])) {
      return result[0];
    }
    return Array.isArray(result) ? (result as T[]) : [];
  }

  async upsert(
    kind: string,
    id: string,
    payload: ArtifactPayload,
    expiresInS: number | undefined,
  ): Promise<void> {
    const p = this.p;
    const grantId = kind === 'Grant' ? id : (payload.grantId ?? null);
    const expiresAt = expiresInS ? Date.now() + expiresInS * 1000 : null;
    // ON CONFLICT ... DO UPDATE works on SQLite (>= 3.24) and PostgreSQL alike; consumed_at is kept
    await this.write(
      `INSERT INTO oauth_artifacts (kind, id, payload, grant_id, uid, client_id, account_id, expires_at)
       VALUES (${p(1)}, ${p(2)}, ${p(3)}, ${p(4)}, ${p(5)}, ${p(6)}, ${p(7)}, ${p(8)})
       ON CONFLICT (kind, id) DO UPDATE SET payload = excluded.payload, grant_id = excluded.grant_id,
         uid = excluded.uid, client_id = excluded.client_id, account_id = excluded.account_id,
         expires_at = excluded.expires_at`,
      [
        kind,
        id,
        JSON.stringify(payload),
        grantId,
        payload.uid ?? null,
        payload.clientId ?? null,
        payload.accountId ?? null,
        expiresAt,
      ],
    );
  }

  async find(kind: string, id: string): Promise<ArtifactPayload | undefined> {
    const p = this.p;
    const rows = await this.db.query<ArtifactRow>(
      `SELECT payload, expires_at, consumed_at FROM oauth_artifacts
        WHERE kind = ${p(1)} AND id = ${p(2)}`,
      [kind, id],
    );
    return this.live(rows[0]);
  }

  async findByUid(kind: string, uid: string): Promise<ArtifactPayload | undefined> {
    const p = this.p;
    const rows = await this.db.query<ArtifactRow>(
      `SELECT payload, expires_at, consumed_at FROM oauth_artifacts
        WHERE kind = ${p(1)} AND uid = ${p(2)}`,
      [kind, uid],
    );
    return this.live(rows[0]);
  }

  private live(row: ArtifactRow | undefined): ArtifactPayload | undefined {
    if (!row || (row.expires_at !== null && Number(row.expires_at) <= Date.now())) {
      return undefined;
    }
    const payload = JSON.parse(row.payload) as ArtifactPayload;
    if (row.consumed_at !== null) {
      payload.consumed = Math.floor(Number(row.consumed_at) / 1000);
    }
    return payload;
  }

  /**
   * Marks the artefact consumed unless it already is: one conditional UPDATE, so of N concurrent
   * redemptions (on any number of instances) exactly one sees `true`.
   */
  async consume(kind: string, id: string): Promise<boolean> {
    const p = this.p;
    const rows = await this.write<{ id: string }>(
      `UPDATE oauth_artifacts SET consumed_at = ${p(1)}
        WHERE kind = ${p(2)} AND id = ${p(3)} AND consumed_at IS NULL RETURNING id`,
      [Date.now(), kind, id],
    );
    return rows.length === 1;
  }

  async destroy(kind: string, id: string): Promise<void> {
    const p = this.p;
    await this.write(`DELETE FROM oauth_artifacts WHERE kind = ${p(1)} AND id = ${p(2)}`, [
      kind,
      id,
    ]);
  }

  /** Removes a grant and everything issued under it (codes, refresh tokens). */
  async revokeGrant(grantId: string, within?: EntityManager): Promise<void> {
    const sql = `DELETE FROM oauth_artifacts WHERE grant_id = ${this.p(1)}`;
    if (within) {
      await within.query(sql, [grantId]);
      return;
    }
    await this.write(sql, [grantId]);
  }

  /** Every artefact of a client (its grants, codes, tokens, interactions). */
  async revokeClient(clientId: string): Promise<void> {
    await this.write(`DELETE FROM oauth_artifacts WHERE client_id = ${this.p(1)}`, [clientId]);
  }

  /** The live grants of one user, newest first. */
  async grantsOf(accountId: string, clientId?: string): Promise<GrantRow[]> {
    const p = this.p;
    const params: unknown[] = [accountId, Date.now()];
    let where = `account_id = ${p(1)} AND kind = 'Grant' AND (expires_at IS NULL OR expires_at > ${p(2)})`;
    if (clientId !== undefined) {
      params.push(clientId);
      where += ` AND client_id = ${p(3)}`;
    }
    const rows = await this.db.query<{ id: string; client_id: string; payload: string }>(
      `SELECT id, client_id, payload FROM oauth_artifacts WHERE ${where} ORDER BY id DESC`,
      params,
    );
    return rows.map((r) => ({
      id: r.id,
      clientId: r.client_id,
      payload: JSON.parse(r.payload) as ArtifactPayload,
    }));
  }

  /**
   * Ends a user's sign-ins to `/oauth` and every token of their grants, in the caller's transaction
   * (a password change, demotion or deletion): the browser sessions, pending interactions, codes
   * and refresh tokens go; the grants (the consent) stay. Access tokens are stopped by
   * `users.oauth_valid_after`, set in the same transaction.
   */
  async endSignIns(manager: EntityManager, accountId: string): Promise<void> {
    await manager.query(
      `DELETE FROM oauth_artifacts WHERE account_id = ${this.p(1)} AND kind <> 'Grant'`,
      [accountId],
    );
  }

  /**
   * The refresh tokens and codes of one client that carry any of `scopes` (the client's scopes were
   * narrowed): deleted. Returns how many.
   */
  async revokeClientTokensWith(clientId: string, scopes: readonly string[]): Promise<number> {
    const p = this.p;
    const rows = await this.db.query<{ kind: string; id: string; payload: string }>(
      `SELECT kind, id, payload FROM oauth_artifacts WHERE client_id = ${p(1)}
         AND kind IN ('RefreshToken', 'AuthorizationCode')`,
      [clientId],
    );
    const doomed = rows.filter((r) => {
      const scope = (JSON.parse(r.payload) as { scope?: unknown }).scope;
      return typeof scope === 'string' && scope.split(' ').some((s) => scopes.includes(s));
    });
    for (const row of doomed) {
      await this.destroy(row.kind, row.id);
    }
    return doomed.length;
  }

  /**
   * The per-request check of an OAuth access token: the role of its user, since when their OAuth
   * tokens are valid, and the client's current scopes, when the grant it was issued under still exists (not revoked, not
   * expired) for that user and the user is live. One primary-key lookup joined to the user and client rows.
   */
  async liveGrant(
    grantId: string,
    userId: string,
  ): Promise<{ role: string; validAfter: string | null; clientScopes: string[] } | undefined> {
    const p = this.p;
    const rows = await this.db.query<{
      role: string;
      oauth_valid_after: string | null;
      scopes: string;
    }>(
      `SELECT u.role AS role, u.oauth_valid_after AS oauth_valid_after, c.scopes AS scopes
         FROM oauth_artifacts g JOIN users u ON u.id = g.account_id
         JOIN oauth_clients c ON c.client_id = g.client_id
        WHERE g.kind = 'Grant' AND g.id = ${p(1)} AND g.account_id = ${p(2)}
          AND (g.expires_at IS NULL OR g.expires_at > ${p(3)}) AND u.deleted_at IS NULL`,
      [grantId, userId, Date.now()],
    );
    const row = rows[0];
    return (
      row && {
        role: row.role,
        validAfter: row.oauth_valid_after,
        clientScopes: row.scopes === '' ? [] : row.scopes.split(' '),
      }
    );
  }

  async purgeExpired(): Promise<void> {
    await this.write(
      `DELETE FROM oauth_artifacts WHERE expires_at IS NOT NULL AND expires_at < ${this.p(1)}`,
      [Date.now()],
    );
  }
}
