import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { DatabaseService } from '../database/database.service.js';

/** The stored manifest (its JSON text) and its version. */
export interface StoredManifest {
  version: number;
  manifest: string;
  fileSha256: string | null;
  updatedAt: string;
}

interface Row {
  version: number | string;
  manifest: string;
  file_sha256: string | null;
  updated_at: string;
}

/** The one owner of `graphql_trusted_documents` SQL (one row, id 1). */
@Injectable()
export class TrustedDocumentsRepository {
  constructor(private readonly db: DatabaseService) {}

  /** The stored manifest; inside a transaction when `manager` is given. */
  async current(manager?: EntityManager): Promise<StoredManifest | undefined> {
    const sql =
      'SELECT version, manifest, file_sha256, updated_at FROM graphql_trusted_documents WHERE id = 1';
    const [row] = manager ? await manager.query<Row[]>(sql) : await this.db.query<Row>(sql);
    return row
      ? {
          version: Number(row.version),
          manifest: row.manifest,
          fileSha256: row.file_sha256,
          updatedAt: row.updated_at,
        }
      : undefined;
  }

  /** The stored version (0: none), the cheap check instances run to see a replacement. */
  async version(): Promise<number> {
    const [row] = await this.db.query<{ version: number | string }>(
      'SELECT version FROM graphql_trusted_documents WHERE id = 1',
    );
    return row ? Number(row.version) : 0;
  }

  /** Replaces the manifest inside `manager`'s transaction; answers the new version. */
  async replace(
    manager: EntityManager,
    manifest: string,
    fileSha256: string | null,
    updatedAt: string,
  ): Promise<number> {
    const p = (n: number) => this.db.p(n);
    await manager.query(
      `INSERT INTO graphql_trusted_documents (id, version, manifest, file_sha256, updated_at)
       VALUES (1, 1, ${p(1)}, ${p(2)}, ${p(3)})
       ON CONFLICT (id) DO UPDATE SET version = graphql_trusted_documents.version + 1,
         manifest = excluded.manifest, file_sha256 = excluded.file_sha256,
         updated_at = excluded.updated_at`,
      [manifest, fileSha256, updatedAt],
    );
    const rows: { version: number | string }[] = await manager.query(
      'SELECT version FROM graphql_trusted_documents WHERE id = 1',
    );
    return Number(rows[0]?.version ?? 0);
  }
}
