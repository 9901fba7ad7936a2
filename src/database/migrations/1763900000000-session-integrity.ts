import { MigrationInterface, QueryRunner, TableColumn, TableIndex } from 'typeorm';

/**
 * Session integrity (docs/data-integrity.md):
 * - `refresh_tokens.family_id`: every token rotated out of one sign-in shares the family of the first;
 *   presenting a used token again revokes that family (and only that one).
 * - `users.tokens_valid_after`: set when the password changes; first-party access tokens issued
 *   before it are refused.
 */
export class SessionIntegrity1763900000000 implements MigrationInterface {
  name = 'SessionIntegrity1763900000000';

  async up(q: QueryRunner): Promise<void> {
    await q.addColumn(
      'refresh_tokens',
      new TableColumn({ name: 'family_id', type: 'varchar', length: '30', isNullable: true }),
    );
    // a token issued before this migration starts its own family
    await q.query('UPDATE refresh_tokens SET family_id = id WHERE family_id IS NULL');
    await q.createIndex(
      'refresh_tokens',
      new TableIndex({ name: 'ix_refresh_tokens_family', columnNames: ['family_id'] }),
    );
    await q.createIndex(
      'refresh_tokens',
      new TableIndex({ name: 'ix_refresh_tokens_user', columnNames: ['user_id'] }),
    );
    await q.addColumn(
      'users',
      new TableColumn({
        name: 'tokens_valid_after',
        type: 'varchar',
        length: '24',
        isNullable: true,
      }),
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await q.dropColumn('users', 'tokens_valid_after');
    await q.dropIndex('refresh_tokens', 'ix_refresh_tokens_user');
    await q.dropIndex('refresh_tokens', 'ix_refresh_tokens_family');
    await q.dropColumn('refresh_tokens', 'family_id');
  }
}
