import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { DatabaseService } from '../database/database.service.js';

/** A response kept for replay: status, the headers that describe the result, the body as sent. */
export interface StoredResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/** What a request carrying an Idempotency-Key may do (docs/idempotency.md). */
export type Claim =
  | { kind: 'claimed' }
  | {
      kind: 'replay';
      response: StoredResponse;
      /** The rights the first request ran with (`rightsOf`, JSON); null on records from before. */
      callerRights: string | null;
    }
  | { kind: 'in_progress' }
  | { kind: 'mismatch' };

interface Row {
  request_hash: string;
  status: number | null;
  response_headers: string | null;
  response_body: string | null;
  caller_rights: string | null;
  locked_until: string | null;
  expires_at: string;
}

/**
 * The one owner of `idempotency_keys` SQL. Every decision is a single conditional statement (an
 * INSERT that does nothing on conflict, an UPDATE guarded by the state it replaces), so of any
 * number of concurrent requests on any number of instances exactly one runs a key.
 */
@Injectable()
export class IdempotencyRepository {
  constructor(private readonly db: DatabaseService) {}

  private p(n: number): string {
    return this.db.p(n);
  }

  private async returning(manager: EntityManager, sql: string, params: unknown[]) {
    if (!manager.queryRunner) {
      throw new Error('idempotency statements run inside a transaction');
    }
    const result = (await manager.queryRunner.query(sql, params, true)) as {
      records?: unknown[];
    };
    return (result.records?.length ?? 0) > 0;
  }

  /**
   * Claims key `id` for a request whose fingerprint is `requestHash`, or says why not. A claim holds
   * until `lockedUntil` (then a retry may take it over: its first runner died); a finished record
   * is replayed until `expiresAt`, after which the key is new again. `callerRights` is kept with a
   * claim it takes.
   */
  claim(
    id: string,
    requestHash: string,
    callerRights: string,
    now: string,
    lockedUntil: string,
    expiresAt: string,
  ): Promise<Claim> {
    const p = (n: number) => this.p(n);
    return this.db.transaction(async ({ manager }) => {
      const inserted = await this.returning(
        manager,
        `INSERT INTO idempotency_keys
           (id, request_hash, caller_rights, created_at, locked_until, expires_at)
         VALUES (${p(1)}, ${p(2)}, ${p(3)}, ${p(4)}, ${p(5)}, ${p(6)})
         ON CONFLICT (id) DO NOTHING RETURNING id`,
        [id, requestHash, callerRights, now, lockedUntil, expiresAt],
      );
      if (inserted) {
        return { kind: 'claimed' };
      }
      const [row] = await manager.query<Row[]>(
        `SELECT request_hash, status, response_headers, response_body, caller_rights, locked_until,
                expires_at
           FROM idempotency_keys WHERE id = ${p(1)}`,
        [id],
      );
      if (!row) {
        return { kind: 'in_progress' }; // purged between the two statements: the client retries
      }
      const expired = row.expires_at <= now;
      if (!expired && row.request_hash !== requestHash) {
        return { kind: 'mismatch' };
      }
      if (!expired && row.status !== null) {
        return {
          kind: 'replay',
          response: {
            status: row.status,
            headers: JSON.parse(row.response_headers ?? '{}') as Record<string, string>,
            body: row.response_body ?? '',
          },
          callerRights: row.caller_rights,
        };
      }
      if (!expired && row.locked_until !== null && row.locked_until > now) {
        return { kind: 'in_progress' };
      }
      // an expired record, or a claim whose runner died: the first to replace it runs the key
      const taken = await this.returning(
        manager,
        `UPDATE idempotency_keys
            SET request_hash = ${p(1)}, status = NULL, response_headers = NULL, response_body = NULL,
                created_at = ${p(2)}, locked_until = ${p(3)}, expires_at = ${p(4)},
                caller_rights = ${p(6)}
          WHERE id = ${p(5)} AND (expires_at <= ${p(2)} OR (status IS NULL AND locked_until <= ${p(2)}))
          RETURNING id`,
        [requestHash, now, lockedUntil, expiresAt, id, callerRights],
      );
      return taken ? { kind: 'claimed' } : { kind: 'in_progress' };
    });
  }

  /** Keeps the first response of a claimed key for replay. */
  async complete(id: string, response: StoredResponse): Promise<void> {
    await this.db.transaction(({ manager }) =>
      manager.query(
        `UPDATE idempotency_keys
            SET status = ${this.p(1)}, response_headers = ${this.p(2)}, response_body = ${this.p(3)},
                locked_until = NULL
          WHERE id = ${this.p(4)} AND status IS NULL`,
        [response.status, JSON.stringify(response.headers), response.body, id],
      ),
    );
  }

  /** Forgets a claimed key whose request is not to be replayed (5xx, 429): a retry runs again. */
  async release(id: string): Promise<void> {
    await this.db.transaction(({ manager }) =>
      manager.query(`DELETE FROM idempotency_keys WHERE id = ${this.p(1)} AND status IS NULL`, [
        id,
      ]),
    );
  }

  /** Deletes every record past its expiry. */
  async purgeExpired(now: string): Promise<void> {
    await this.db.transaction(({ manager }) =>
      manager.query(`DELETE FROM idempotency_keys WHERE expires_at <= ${this.p(1)}`, [now]),
    );
  }
}
