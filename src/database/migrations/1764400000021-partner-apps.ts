import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Partner apps (docs/oauth.md):
 * - `users.oauth_valid_after`: set by a password change, a demotion or a deletion; OAuth access
 *   tokens issued before it are refused (the user's grants stay, their tokens and sign-in sessions
 *   end).
 * - `oauth_clients`: the consent page's branding (`logo_uri`, `client_uri`, `policy_uri`,
 *   `tos_uri`), `updated_at`, and the previous secret's hash with the time it stops working (a
 *   rotation keeps the old secret valid for OAUTH_SECRET_OVERLAP_S).
 * - `refresh_tokens.grace_pair`: the pair a first-party refresh token was traded for, encrypted
 *   with a key derived from that refresh token, so a second presentation within
 *   REFRESH_REUSE_GRACE_S (two tabs refreshing at once) gets the same pair back.
 *
 * Plain `ALTER TABLE ... ADD/DROP COLUMN` on both databases: TypeORM's addColumn rebuilds a SQLite
 * table, which would drop the search-index triggers on `users` (1764300000019-search-index.ts).
 */
const COLUMNS: [table: string, column: string, type: string][] = [
  ['users', 'oauth_valid_after', 'varchar(24)'],
  ['oauth_clients', 'logo_uri', 'varchar(2048)'],
  ['oauth_clients', 'client_uri', 'varchar(2048)'],
  ['oauth_clients', 'policy_uri', 'varchar(2048)'],
  ['oauth_clients', 'tos_uri', 'varchar(2048)'],
  ['oauth_clients', 'updated_at', 'varchar(24)'],
  ['oauth_clients', 'previous_secret_hash', 'varchar(64)'],
  ['oauth_clients', 'previous_secret_expires_at', 'varchar(24)'],
  ['refresh_tokens', 'grace_pair', 'text'],
];

export class PartnerApps1764400000021 implements MigrationInterface {
  name = 'PartnerApps1764400000021';

  async up(q: QueryRunner): Promise<void> {
    for (const [table, column, type] of COLUMNS) {
      await q.query(`ALTER TABLE ${table} ADD COLUMN ${column} ${type} NULL`);
    }
  }

  async down(q: QueryRunner): Promise<void> {
    for (const [table, column] of [...COLUMNS].reverse()) {
      await q.query(`ALTER TABLE ${table} DROP COLUMN ${column}`);
    }
  }
}
