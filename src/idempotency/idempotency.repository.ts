import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { DatabaseService } from '../database/database.service.js';

/** A response kept for replay: status, the headers that describe the result, the body as sent. */
export interface StoredResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/** A key's live record: the first request's fingerprint, its rights and the response it got. */
export interface KeyRecord {
  requestHash: string;
  response: StoredResponse;
  /** The rights the first request ran with (`rightsOf`, JSON); null on records from before. */
  callerRights: string | null;
}

/** What a new record holds besides its id. */
export interface NewKeyRecord extends KeyRecord {
  createdAt: string;
  expiresAt: string;
}

interface Row {
  request_hash: string;
  status: number | null;
  response_headers: string | null;
  response_body: string | null;
  caller_rights: string | null;
  expires_at: string;
}

/**
 * The one owner of `idempotency_keys` SQL. A record is written only in the transaction of the
 * request it answers (docs/idempotency.md), so a record that exists is a request that committed,
 * with its response. Rows without a status (claims written by earlier versions, which committed the
 * claim on its own) are not records: a request may take their key at once.
 */
@Injectable()
export class IdempotencyRepository {
  constructor(private readonly db: DatabaseService) {}

  private p(n: number): string {
    return this.db.p(n);
  }

  private static record(row: Row | undefined, now: string): KeyRecord | undefined {
    if (!row || row.status === null || row.expires_at <= now) {
      return undefined;
    }
    return {
      requestHash: row.request_hash,
      response: {
        status: row.status,
        headers: JSON.parse(row.response_headers ?? '{}') as Record<string, string>,
        body: row.response_body ?? '',
      },
      callerRights: row.caller_rights,
    };
  }

  private select(): string {
    return `SELECT request_hash, status, response_headers, response_body, caller_rights, expires_at
              FROM idempotency_keys WHERE id = ${this.p(1)}`;
  }

  /** The live record of key `id` (committed and not expired), outside any transaction. */
  async find(id: string, now: string): Promise<KeyRecord | undefined> {
    const [row] = await this.db.query<Row>(this.select(), [id]);
    return IdempotencyRepository.record(row, now);
  }

  /** The same, read in the transaction that holds the key (`lock`). */
  async findIn(manager: EntityManager, id: string, now: string): Promise<KeyRecord | undefined> {
    const [row] = await manager.query<Row[]>(this.select(), [id]);
    return IdempotencyRepository.record(row, now);
  }

  /**
   * Takes key `id` for the transaction of `manager` until it ends, or answers false when another
   * transaction holds it now. PostgreSQL: a transaction-scoped advisory lock, released by the
   * commit, the rollback or the death of the connection (a killed instance frees its keys at once).
   * SQLite serializes transactions in its one process, so the transaction holds every key.
   */
  async lock(manager: EntityManager, id: string): Promise<boolean> {
    if (this.db.dialect !== 'postgres') {
      return true;
    }
    const [row] = await manager.query<{ locked: boolean }[]>(
      `SELECT pg_try_advisory_xact_lock(hashtextextended(${this.p(1)}, 0)) AS locked`,
      [id],
    );
    return row?.locked === true;
  }

  /**
   * Writes the record of key `id` in the transaction of `manager`, which holds the key (`lock`)
   * and found no live record: an expired record or an earlier version's claim is replaced. False
   * when a live record appeared meanwhile (another instance on a shared SQLite file): the caller
   * rolls back.
   */
  async store(manager: EntityManager, id: string, record: NewKeyRecord): Promise<boolean> {
    const p = (n: number) => this.p(n);
    if (!manager.queryRunner) {
      throw new Error('an Idempotency-Key record is written inside its transaction');
    }
    const result = (await manager.queryRunner.query(
      `INSERT INTO idempotency_keys
         (id, request_hash, caller_rights, status, response_headers, response_body, created_at,
          locked_until, expires_at)
       VALUES (${p(1)}, ${p(2)}, ${p(3)}, ${p(4)}, ${p(5)}, ${p(6)}, ${p(7)}, NULL, ${p(8)})
       ON CONFLICT (id) DO UPDATE SET
         request_hash = excluded.request_hash, caller_rights = excluded.caller_rights,
         status = excluded.status, response_headers = excluded.response_headers,
         response_body = excluded.response_body, created_at = excluded.created_at,
         locked_until = NULL, expires_at = excluded.expires_at
       WHERE idempotency_keys.status IS NULL OR idempotency_keys.expires_at <= excluded.created_at
       RETURNING id`,
      [
        id,
        record.requestHash,
        record.callerRights,
        record.response.status,
        JSON.stringify(record.response.headers),
        record.response.body,
        record.createdAt,
        record.expiresAt,
      ],
      true,
    )) as { records?: unknown[] };
    return (result.records?.length ?? 0) > 0;
  }

  /** Deletes every record past its expiry. */
  async purgeExpired(now: string): Promise<void> {
    await this.db.transaction(({ manager }) =>
      manager.query(`DELETE FROM idempotency_keys WHERE expires_at <= ${this.p(1)}`, [now]),
    );
  }
}
