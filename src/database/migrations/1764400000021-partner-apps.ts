import { MigrationInterface, QueryRunner, TableColumn } from 'typeorm';

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
 */
export class PartnerApps1764400000021 implements MigrationInterface {
  name = 'PartnerApps1764400000021';

  async up(q: QueryRunner): Promise<void> {
    await q.addColumn(
      'refresh_tokens',
      new TableColumn({ name: 'grace_pair', type: 'text', isNullable: true }),
    );
    await q.addColumn(
      'users',
      new TableColumn({
        name: 'oauth_valid_after',
        type: 'varchar',
        length: '24',
        isNullable: true,
      }),
    );
    await q.addColumns('oauth_clients', [
      ...['logo_uri', 'client_uri', 'policy_uri', 'tos_uri'].map(
        (name) => new TableColumn({ name, type: 'varchar', length: '2048', isNullable: true }),
      ),
      new TableColumn({ name: 'updated_at', type: 'varchar', length: '24', isNullable: true }),
      new TableColumn({
        name: 'previous_secret_hash',
        type: 'varchar',
        length: '64',
        isNullable: true,
      }),
      new TableColumn({
        name: 'previous_secret_expires_at',
        type: 'varchar',
        length: '24',
        isNullable: true,
      }),
    ]);
  }

  async down(q: QueryRunner): Promise<void> {
    for (const name of [
      'previous_secret_expires_at',
      'previous_secret_hash',
      'updated_at',
      'tos_uri',
      'policy_uri',
      'client_uri',
      'logo_uri',
    ]) {
      await q.dropColumn('oauth_clients', name);
    }
    await q.dropColumn('users', 'oauth_valid_after');
    await q.dropColumn('refresh_tokens', 'grace_pair');
  }
}
