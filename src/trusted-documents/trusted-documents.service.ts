import { readFileSync } from 'node:fs';
import { Inject, Injectable, Logger, type OnApplicationBootstrap } from '@nestjs/common';
import type { GraphQLSchema } from 'graphql';
import { ChangeRecord } from '../changes/change-record.js';
import { Forbidden, PreconditionFailed, ValidationFailed } from '../common/errors.js';
import { APP_CONFIG, type AppConfig, type TrustedDocumentsMode } from '../config/config.js';
import { DatabaseService } from '../database/database.service.js';
import { isAdmin, type Caller } from '../identity/caller.js';
import { checkManifest, sha256Hex, type Manifest, type TrustedOperation } from './manifest.js';
import { TrustedDocumentsRepository } from './trusted-documents.repository.js';

/** How often an instance asks the database whether another one replaced the manifest. */
const REFRESH_MS = 2_000;

/** The manifest an instance serves, indexed for the request path. */
interface Loaded {
  version: number;
  manifest: Manifest;
  updatedAt: string | null;
  byId: Map<string, TrustedOperation>;
  byBodyHash: Map<string, TrustedOperation>;
}

const EMPTY: Loaded = {
  version: 0,
  manifest: { format: 'apollo-persisted-query-manifest', version: 1, operations: [] },
  updatedAt: null,
  byId: new Map(),
  byBodyHash: new Map(),
};

function indexed(manifest: Manifest, version: number, updatedAt: string | null): Loaded {
  return {
    version,
    manifest,
    updatedAt,
    byId: new Map(manifest.operations.map((op) => [op.id, op])),
    byBodyHash: new Map(manifest.operations.map((op) => [sha256Hex(op.body), op])),
  };
}

/** The manifest as GET answers it, with its version and when it was last replaced. */
export interface ManifestView {
  manifest: Manifest;
  version: number;
  updatedAt: string | null;
}

/**
 * Trusted documents (docs/graphql.md "Trusted documents"): the manifest of the operations
 * first-party frontends may send, in Apollo's persisted query list format.
 *
 * - At boot the GRAPHQL_TRUSTED_DOCUMENTS file is checked against the schema (a bad file fails the
 *   boot) and stored, unless the database already holds this same file's manifest (then a
 *   replacement an ADMIN made since is kept).
 * - An ADMIN replaces it (`replace`, audited through the change record); the database row's
 *   version tells the other instances, which check it at most every REFRESH_MS, in the background
 *   of a request (the request itself never waits for the database).
 */
@Injectable()
export class TrustedDocumentsService implements OnApplicationBootstrap {
  private readonly logger = new Logger('TrustedDocuments');
  private loaded: Loaded = EMPTY;
  private checkedAt = 0;
  private checking: Promise<void> | undefined;

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly db: DatabaseService,
    private readonly documents: TrustedDocumentsRepository,
    private readonly changeRecord: ChangeRecord,
  ) {}

  private schema: GraphQLSchema | undefined;

  /** The served schema, which manifests are checked against (given by the GraphQL transport at start). */
  useSchema(schema: GraphQLSchema): void {
    this.schema = schema;
  }

  private servedSchema(): GraphQLSchema {
    if (!this.schema) {
      throw new Error('trusted documents: the GraphQL schema is not built yet');
    }
    return this.schema;
  }

  get mode(): TrustedDocumentsMode {
    return this.config.graphqlTrustedDocumentsMode;
  }

  async onApplicationBootstrap(): Promise<void> {
    const path = this.config.graphqlTrustedDocuments;
    if (path) {
      await this.loadFile(path);
    }
    await this.reload();
  }

  /** A listed operation by its manifest id (a request's `documentId`). */
  byId(id: string): TrustedOperation | undefined {
    this.refreshIfDue();
    return this.loaded.byId.get(id);
  }

  /** A listed operation by the SHA-256 (hex) of its body: an APQ hash, or a text sent as is. */
  byBodyHash(hash: string): TrustedOperation | undefined {
    this.refreshIfDue();
    return this.loaded.byBodyHash.get(hash);
  }

  /** The manifest in force (ADMIN). */
  async current(caller: Caller): Promise<ManifestView> {
    this.assertAdmin(caller);
    await this.reload();
    const { manifest, version, updatedAt } = this.loaded;
    return { manifest, version, updatedAt };
  }

  /**
   * Replaces the manifest (ADMIN): checked against the schema first, and `precondition` (If-Match)
   * against the stored one inside the write's transaction; nothing changes on a problem.
   */
  async replace(
    caller: Caller,
    body: unknown,
    precondition?: (current: ManifestView) => boolean,
  ): Promise<ManifestView> {
    this.assertAdmin(caller);
    const checked = checkManifest(body, this.servedSchema());
    if ('errors' in checked) {
      throw ValidationFailed(checked.errors, 'The trusted documents manifest is not valid');
    }
    await this.store(checked.manifest, null, caller, precondition);
    return this.current(caller);
  }

  private assertAdmin(caller: Caller): void {
    // first-party ADMINs only: the manifest decides what every frontend may run
    if (!isAdmin(caller) || caller.method === 'oauth') {
      throw Forbidden('Only an ADMIN may read or replace the trusted documents');
    }
  }

  private async loadFile(path: string): Promise<void> {
    let raw: string;
    let parsed: unknown;
    try {
      raw = readFileSync(path, 'utf8');
      parsed = JSON.parse(raw);
    } catch (err) {
      throw new Error(
        `GRAPHQL_TRUSTED_DOCUMENTS: cannot read ${path} as JSON (${err instanceof Error ? err.message : String(err)})`,
      );
    }
    const checked = checkManifest(parsed, this.servedSchema());
    if ('errors' in checked) {
      const problems = checked.errors
        .slice(0, 5)
        .map((e) => `${e.field ?? '(manifest)'} ${e.message}`)
        .join('; ');
      throw new Error(
        `GRAPHQL_TRUSTED_DOCUMENTS: ${path} is not a valid persisted query manifest for this schema (${checked.errors.length} problem(s)): ${problems}`,
      );
    }
    const fileSha = sha256Hex(raw);
    const stored = await this.documents.current();
    if (stored?.fileSha256 === fileSha) {
      return; // this file was loaded before: keep what is stored (an ADMIN may have replaced it)
    }
    await this.store(checked.manifest, fileSha, 'system');
    this.logger.log(
      `trusted documents: ${checked.manifest.operations.length} operation(s) loaded from ${path}`,
    );
  }

  private async store(
    manifest: Manifest,
    fileSha: string | null,
    actor: Caller | 'system',
    precondition?: (current: ManifestView) => boolean,
  ): Promise<void> {
    await this.db.transaction(async (tx) => {
      const before = await this.documents.current(tx.manager);
      const beforeManifest = before ? (JSON.parse(before.manifest) as Manifest) : undefined;
      const current: ManifestView = {
        manifest: beforeManifest ?? EMPTY.manifest,
        version: before?.version ?? 0,
        updatedAt: before?.updatedAt ?? null,
      };
      if (precondition && !precondition(current)) {
        throw PreconditionFailed(
          'The trusted documents manifest has changed (If-Match does not match)',
        );
      }
      const beforeCount = beforeManifest ? beforeManifest.operations.length : null;
      const version = await this.documents.replace(
        tx.manager,
        JSON.stringify(manifest),
        fileSha,
        new Date().toISOString(),
      );
      await this.changeRecord.record(tx, {
        type: 'graphql.trusted_documents_replaced',
        version,
        operations: [beforeCount, manifest.operations.length],
        actor,
      });
    });
    await this.reload();
  }

  /** Reads the stored manifest when its version differs from the one held. */
  private async reload(): Promise<void> {
    this.checkedAt = Date.now();
    const version = await this.documents.version();
    if (version === this.loaded.version) {
      return;
    }
    const stored = await this.documents.current();
    this.loaded = stored
      ? indexed(JSON.parse(stored.manifest) as Manifest, stored.version, stored.updatedAt)
      : EMPTY;
  }

  private refreshIfDue(): void {
    if (this.checking || Date.now() - this.checkedAt < REFRESH_MS) {
      return;
    }
    this.checking = this.reload()
      .catch((err: unknown) => {
        this.logger.warn(
          { err },
          'trusted documents: version check failed; keeping the manifest held',
        );
      })
      .finally(() => {
        this.checking = undefined;
      });
  }
}
