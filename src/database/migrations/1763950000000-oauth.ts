import { MigrationInterface, QueryRunner, Table, TableIndex } from 'typeorm';

/**
 * OAuth 2.0 authorization server storage (docs/oauth.md). Dialect-neutral (QueryRunner/Table API).
 *
 * - `oauth_clients`: partner apps registered by an ADMIN; the secret only as a SHA-256 hash.
 * - `oauth_artifacts`: everything oidc-provider persists (sessions, interactions, grants,
 *   authorization codes, refresh tokens...), one row per artefact as JSON, with the columns it is
 *   looked up by. `consumed_at` is set by a conditional UPDATE so a code or refresh token is
 *   redeemed once across instances. Times are epoch milliseconds.
 */
export class OAuth1763950000000 implements MigrationInterface {
  name = 'OAuth1763950000000';

  async up(q: QueryRunner): Promise<void> {
    await q.createTable(
      new Table({
        name: 'oauth_clients',
        columns: [
          { name: 'client_id', type: 'varchar', length: '40', isPrimary: true },
          { name: 'name', type: 'varchar', length: '100' },
          { name: 'redirect_uris', type: 'text' },
          { name: 'scopes', type: 'text' },
          { name: 'is_public', type: 'boolean' },
          { name: 'secret_hash', type: 'varchar', length: '64', isNullable: true },
          { name: 'created_by', type: 'varchar', length: '30' },
          { name: 'created_at', type: 'varchar', length: '24' },
        ],
      }),
    );
    await q.createIndex(
      'oauth_clients',
      new TableIndex({
        name: 'ix_oauth_clients_created',
        columnNames: ['created_at', 'client_id'],
      }),
    );

    await q.createTable(
      new Table({
        name: 'oauth_artifacts',
        columns: [
          { name: 'kind', type: 'varchar', length: '40', isPrimary: true },
          { name: 'id', type: 'varchar', length: '255', isPrimary: true },
          { name: 'payload', type: 'text' },
          { name: 'grant_id', type: 'varchar', length: '255', isNullable: true },
          { name: 'uid', type: 'varchar', length: '255', isNullable: true },
          { name: 'client_id', type: 'varchar', length: '255', isNullable: true },
          { name: 'account_id', type: 'varchar', length: '255', isNullable: true },
          { name: 'expires_at', type: 'bigint', isNullable: true },
          { name: 'consumed_at', type: 'bigint', isNullable: true },
        ],
      }),
    );
    await q.createIndices('oauth_artifacts', [
      new TableIndex({ name: 'ix_oauth_artifacts_grant', columnNames: ['grant_id'] }),
      new TableIndex({ name: 'ix_oauth_artifacts_uid', columnNames: ['uid'] }),
      new TableIndex({ name: 'ix_oauth_artifacts_client', columnNames: ['client_id'] }),
      new TableIndex({ name: 'ix_oauth_artifacts_account', columnNames: ['account_id', 'kind'] }),
      new TableIndex({ name: 'ix_oauth_artifacts_expires', columnNames: ['expires_at'] }),
    ]);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.dropTable('oauth_artifacts');
    await q.dropTable('oauth_clients');
  }
}
