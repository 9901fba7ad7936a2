import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import type { ListQuery, Page } from '../../common/list-query.js';
import { numberedPage, orderBySql } from '../../database/paging.js';
import { DatabaseService } from '../../database/database.service.js';

export interface OAuthClientRecord {
  clientId: string;
  name: string;
  redirectUris: string[];
  scopes: string[];
  isPublic: boolean;
  /** SHA-256 (hex) of the secret; null for public clients. */
  secretHash: string | null;
  createdBy: string;
  createdAt: string;
  /** The consent page's branding: an https logo and links (null: none). */
  logoUri: string | null;
  clientUri: string | null;
  policyUri: string | null;
  tosUri: string | null;
  updatedAt: string | null;
  /** The secret before the last rotation (SHA-256) and when it stops working. */
  previousSecretHash: string | null;
  previousSecretExpiresAt: string | null;
}

interface ClientRow {
  client_id: string;
  name: string;
  redirect_uris: string;
  scopes: string;
  is_public: boolean | number;
  secret_hash: string | null;
  created_by: string;
  created_at: string;
  logo_uri: string | null;
  client_uri: string | null;
  policy_uri: string | null;
  tos_uri: string | null;
  updated_at: string | null;
  previous_secret_hash: string | null;
  previous_secret_expires_at: string | null;
}

const COLUMNS =
  'client_id, name, redirect_uris, scopes, is_public, secret_hash, created_by, created_at, ' +
  'logo_uri, client_uri, policy_uri, tos_uri, updated_at, previous_secret_hash, previous_secret_expires_at';

function toRecord(row: ClientRow): OAuthClientRecord {
  return {
    clientId: row.client_id,
    name: row.name,
    redirectUris: JSON.parse(row.redirect_uris) as string[],
    scopes: row.scopes === '' ? [] : row.scopes.split(' '),
    isPublic: Boolean(row.is_public),
    secretHash: row.secret_hash,
    createdBy: row.created_by,
    createdAt: row.created_at,
    logoUri: row.logo_uri,
    clientUri: row.client_uri,
    policyUri: row.policy_uri,
    tosUri: row.tos_uri,
    updatedAt: row.updated_at,
    previousSecretHash: row.previous_secret_hash,
    previousSecretExpiresAt: row.previous_secret_expires_at,
  };
}

/** The one owner of `oauth_clients` (registered partner apps). */
@Injectable()
export class OAuthClientsRepository {
  constructor(private readonly db: DatabaseService) {}

  /** With `within`, in that transaction (an audited change); else in one of its own. */
  async insert(client: OAuthClientRecord, within?: EntityManager): Promise<void> {
    const p = (n: number) => this.db.p(n);
    const run = (work: (m: EntityManager) => Promise<unknown>) =>
      within ? work(within) : this.db.transaction(({ manager }) => work(manager));
    await run((manager) =>
      manager.query(
        `INSERT INTO oauth_clients (${COLUMNS})
         VALUES (${p(1)}, ${p(2)}, ${p(3)}, ${p(4)}, ${p(5)}, ${p(6)}, ${p(7)}, ${p(8)},
           ${p(9)}, ${p(10)}, ${p(11)}, ${p(12)}, ${p(13)}, ${p(14)}, ${p(15)})`,
        [
          client.clientId,
          client.name,
          JSON.stringify(client.redirectUris),
          client.scopes.join(' '),
          this.db.dialect === 'postgres' ? client.isPublic : Number(client.isPublic),
          client.secretHash,
          client.createdBy,
          client.createdAt,
          client.logoUri,
          client.clientUri,
          client.policyUri,
          client.tosUri,
          client.updatedAt,
          client.previousSecretHash,
          client.previousSecretExpiresAt,
        ],
      ),
    );
  }

  /**
   * Writes every editable member of a registered client back (PATCH, secret rotation); with
   * `within`, in that transaction (an audited change), else in one of its own.
   */
  async update(client: OAuthClientRecord, within?: EntityManager): Promise<boolean> {
    const p = (n: number) => this.db.p(n);
    const run = <T>(work: (m: EntityManager) => Promise<T>) =>
      within ? work(within) : this.db.transaction(({ manager }) => work(manager));
    const rows = await run((manager) =>
      manager.query(
        `UPDATE oauth_clients SET name = ${p(1)}, redirect_uris = ${p(2)}, scopes = ${p(3)},
           logo_uri = ${p(4)}, client_uri = ${p(5)}, policy_uri = ${p(6)}, tos_uri = ${p(7)},
           updated_at = ${p(8)}, secret_hash = ${p(9)}, previous_secret_hash = ${p(10)},
           previous_secret_expires_at = ${p(11)}
         WHERE client_id = ${p(12)} RETURNING client_id`,
        [
          client.name,
          JSON.stringify(client.redirectUris),
          client.scopes.join(' '),
          client.logoUri,
          client.clientUri,
          client.policyUri,
          client.tosUri,
          client.updatedAt,
          client.secretHash,
          client.previousSecretHash,
          client.previousSecretExpiresAt,
          client.clientId,
        ],
      ),
    );
    // PostgreSQL answers an UPDATE ... RETURNING with [rows, count] through TypeORM
    const list: unknown[] =
      Array.isArray(rows) && Array.isArray(rows[0]) ? (rows[0] as unknown[]) : (rows as unknown[]);
    return list.length > 0;
  }

  async find(clientId: string): Promise<OAuthClientRecord | undefined> {
    const rows = await this.db.query<ClientRow>(
      `SELECT ${COLUMNS} FROM oauth_clients WHERE client_id = ${this.db.p(1)}`,
      [clientId],
    );
    return rows[0] ? toRecord(rows[0]) : undefined;
  }

  /** The client read in the transaction of a change, locked until it ends (PostgreSQL). */
  async findLocked(
    manager: EntityManager,
    clientId: string,
  ): Promise<OAuthClientRecord | undefined> {
    const lock = this.db.dialect === 'postgres' ? ' FOR UPDATE' : '';
    const rows = await manager.query<ClientRow[]>(
      `SELECT ${COLUMNS} FROM oauth_clients WHERE client_id = ${this.db.p(1)}${lock}`,
      [clientId],
    );
    return rows[0] ? toRecord(rows[0]) : undefined;
  }

  async findMany(clientIds: string[]): Promise<OAuthClientRecord[]> {
    if (clientIds.length === 0) {
      return [];
    }
    const marks = clientIds.map((_, i) => this.db.p(i + 1)).join(', ');
    const rows = await this.db.query<ClientRow>(
      `SELECT ${COLUMNS} FROM oauth_clients WHERE client_id IN (${marks})`,
      clientIds,
    );
    return rows.map(toRecord);
  }

  async page(query: ListQuery): Promise<Page<OAuthClientRecord>> {
    const { rows, meta } = await numberedPage<ClientRow>(
      this.db,
      {
        columns: COLUMNS,
        from: 'oauth_clients',
        where: '1 = 1',
        orderBy: orderBySql(query.sort, { created_at: 'created_at' }).replace(
          /\bid\b/g,
          'client_id',
        ),
      },
      [],
      query,
    );
    return { data: rows.map(toRecord), meta };
  }

  /** True when a row was deleted. */
  async delete(clientId: string, within?: EntityManager): Promise<boolean> {
    const work = async (manager: EntityManager) => {
      const found = await manager.query<unknown[]>(
        `SELECT 1 AS one FROM oauth_clients WHERE client_id = ${this.db.p(1)}`,
        [clientId],
      );
      await manager.query(`DELETE FROM oauth_clients WHERE client_id = ${this.db.p(1)}`, [
        clientId,
      ]);
      return found.length > 0;
    };
    return within ? work(within) : this.db.transaction(({ manager }) => work(manager));
  }
}
