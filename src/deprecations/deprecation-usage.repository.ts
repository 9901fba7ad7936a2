import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { DatabaseService } from '../database/database.service.js';
import {
  fromRow,
  type UsageIncrement,
  type UsageTotal,
  type UsageTotalRow,
} from './deprecation-usage.row.js';

/** The one owner of `deprecation_usage` SQL (docs/changes.md, "Usage per client"). */
@Injectable()
export class DeprecationUsageRepository {
  constructor(private readonly db: DatabaseService) {}

  /** Adds a batch of counts: one statement, `n = n + excluded.n`, so instances never lose counts. */
  async add(manager: EntityManager, rows: UsageIncrement[]): Promise<void> {
    if (rows.length === 0) {
      return;
    }
    const params: unknown[] = [];
    const values = rows.map((r) => {
      const at = params.length;
      params.push(r.element, r.client, r.day, r.n, r.lastUsedAt);
      return `(${[1, 2, 3, 4, 5].map((i) => this.db.p(at + i)).join(', ')})`;
    });
    await manager.query(
      `INSERT INTO deprecation_usage (element, client, day, n, last_used_at) VALUES ${values.join(', ')}
       ON CONFLICT (element, client, day) DO UPDATE SET
         n = deprecation_usage.n + excluded.n,
         last_used_at = CASE WHEN excluded.last_used_at > deprecation_usage.last_used_at
           THEN excluded.last_used_at ELSE deprecation_usage.last_used_at END`,
      params,
    );
  }

  /** Days before `day` (`YYYY-MM-DD`) are dropped. */
  async pruneBefore(manager: EntityManager, day: string): Promise<void> {
    await manager.query(`DELETE FROM deprecation_usage WHERE day < ${this.db.p(1)}`, [day]);
  }

  /** Each (element, client) with its count and last use, from `sinceDay` on. */
  async totals(sinceDay: string): Promise<UsageTotal[]> {
    const rows = await this.db.query<UsageTotalRow>(
      `SELECT element, client, SUM(n) AS n, MAX(last_used_at) AS last_used_at
         FROM deprecation_usage WHERE day >= ${this.db.p(1)}
        GROUP BY element, client ORDER BY element, client`,
      [sinceDay],
    );
    return rows.map(fromRow);
  }
}
