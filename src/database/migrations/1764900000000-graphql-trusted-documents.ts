import { MigrationInterface, QueryRunner, Table } from 'typeorm';

/**
 * `graphql_trusted_documents`: the trusted documents manifest (docs/graphql.md "Trusted documents"),
 * one row (`id` 1). `version` grows with every replacement: instances compare it with the one they
 * hold and reload. `file_sha256`: the SHA-256 of the GRAPHQL_TRUSTED_DOCUMENTS file last loaded, so a
 * boot with the same file keeps a manifest an ADMIN replaced since, and a new file replaces it.
 */
export class GraphqlTrustedDocuments1764900000000 implements MigrationInterface {
  name = 'GraphqlTrustedDocuments1764900000000';

  async up(q: QueryRunner): Promise<void> {
    await q.createTable(
      new Table({
        name: 'graphql_trusted_documents',
        columns: [
          { name: 'id', type: 'integer', isPrimary: true },
          { name: 'version', type: 'integer' },
          { name: 'manifest', type: 'text' },
          { name: 'file_sha256', type: 'varchar', length: '64', isNullable: true },
          { name: 'updated_at', type: 'varchar', length: '30' },
        ],
      }),
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await q.dropTable('graphql_trusted_documents');
  }
}
