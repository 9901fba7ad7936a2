import { Injectable, Logger, type OnModuleDestroy, type OnModuleInit } from '@nestjs/common';
import { nowIso } from '../common/ids.js';
import { BadRequest, Forbidden } from '../common/errors.js';
import { DatabaseService } from '../database/database.service.js';
import { isAdmin, type MaybeCaller } from '../identity/caller.js';
import type { DeprecatedElement } from './deprecated-elements.js';
import { DeprecationUsageRepository } from './deprecation-usage.repository.js';
import type { UsageIncrement } from './deprecation-usage.row.js';

/** Counts are kept this many days (daily buckets). */
const RETENTION_DAYS = 90;
/** Pending counts are written at least this often (and when the app shuts down). */
const FLUSH_EVERY_MS = 2000;
const DAY_MS = 86_400_000;
/** The most elements `deprecationUsage(first:)` may ask for. */
const MAX_ELEMENTS = 100;

/** One deprecated element with the clients that used it since the date asked for. */
export interface DeprecationReport extends DeprecatedElement {
  clients: { client: string; count: number; lastUsedAt: string }[];
}

function dayOf(iso: string): string {
  return iso.slice(0, 10);
}

/**
 * Usage of deprecated GraphQL elements per client (docs/changes.md, "Usage per client"). The request
 * path only adds to an in-memory map; a timer writes the map in one statement every
 * FLUSH_EVERY_MS, and once more at shutdown, so a restart loses nothing that was counted before it.
 * A report first writes this instance's pending counts; another instance's appear after its next
 * flush.
 */
@Injectable()
export class DeprecationUsageService implements OnModuleInit, OnModuleDestroy {
  private readonly logger = new Logger('Deprecations');
  private pending = new Map<string, UsageIncrement>();
  private catalogue: DeprecatedElement[] = [];
  private timer: NodeJS.Timeout | undefined;
  private flushing: Promise<void> = Promise.resolve();
  private prunedDay = '';

  constructor(
    private readonly db: DatabaseService,
    private readonly usage: DeprecationUsageRepository,
  ) {}

  onModuleInit(): void {
    this.timer = setInterval(() => void this.flush(), FLUSH_EVERY_MS);
    this.timer.unref();
  }

  async onModuleDestroy(): Promise<void> {
    clearInterval(this.timer);
    await this.flush();
  }

  /** The schema's deprecated elements (set by the GraphQL plugin when the server starts). */
  describe(elements: DeprecatedElement[]): void {
    this.catalogue = elements;
  }

  /** One operation of `client` used these elements (each counted once per operation). */
  record(coordinates: Iterable<string>, client: string): void {
    const at = nowIso();
    const day = dayOf(at);
    for (const element of coordinates) {
      const key = `${element}\u0000${client}\u0000${day}`;
      const entry = this.pending.get(key);
      if (entry) {
        entry.n += 1;
        entry.lastUsedAt = at;
      } else {
        this.pending.set(key, { element, client, day, n: 1, lastUsedAt: at });
      }
    }
  }

  /** Writes the pending counts (one at a time; a failed write keeps them for the next). */
  flush(): Promise<void> {
    this.flushing = this.flushing.then(() => this.write());
    return this.flushing;
  }

  private async write(): Promise<void> {
    const today = dayOf(nowIso());
    const oldest = dayOf(new Date(Date.now() - RETENTION_DAYS * DAY_MS).toISOString());
    const prune = this.prunedDay !== today;
    if (this.pending.size === 0 && !prune) {
      return;
    }
    const batch = this.pending;
    this.pending = new Map();
    try {
      await this.db.transaction(async ({ manager }) => {
        await this.usage.add(manager, [...batch.values()]);
        if (prune) {
          await this.usage.pruneBefore(manager, oldest);
        }
      });
      this.prunedDay = today;
    } catch (err) {
      for (const [key, entry] of batch) {
        const later = this.pending.get(key);
        this.pending.set(
          key,
          later ? { ...later, n: later.n + entry.n, lastUsedAt: later.lastUsedAt } : entry,
        );
      }
      this.logger.warn(`deprecation usage not written yet: ${(err as Error).message}`);
    }
  }

  /**
   * Each deprecated element of the schema with each client that used it on or after `since` (an
   * RFC 3339 date-time; default and earliest: RETENTION_DAYS ago), its count and last use, the
   * first `first` elements by coordinate (all when not given). ADMIN only.
   */
  async report(
    caller: MaybeCaller,
    since?: string | null,
    first?: number | null,
  ): Promise<DeprecationReport[]> {
    if (!isAdmin(caller)) {
      throw Forbidden();
    }
    if (first !== undefined && first !== null && (first < 0 || first > MAX_ELEMENTS)) {
      throw BadRequest('Invalid arguments', [
        { field: 'first', message: `first must be an integer from 0 to ${MAX_ELEMENTS}` },
      ]);
    }
    const earliest = Date.now() - RETENTION_DAYS * DAY_MS;
    let from = earliest;
    if (since !== undefined && since !== null) {
      const parsed = Date.parse(since);
      if (Number.isNaN(parsed)) {
        throw BadRequest('Invalid arguments', [
          { field: 'since', message: 'since must be an RFC 3339 date-time' },
        ]);
      }
      from = Math.max(parsed, earliest);
    }
    await this.flush();
    const totals = await this.usage.totals(dayOf(new Date(from).toISOString()));
    const known = new Map<string, DeprecationReport>(
      this.catalogue.map((e) => [e.coordinate, { ...e, clients: [] }]),
    );
    for (const t of totals) {
      // an element removed from the schema since keeps its history in the report
      let entry = known.get(t.element);
      if (!entry) {
        entry = { coordinate: t.element, kind: 'field', reason: '', clients: [] };
        known.set(t.element, entry);
      }
      entry.clients.push({ client: t.client, count: t.count, lastUsedAt: t.lastUsedAt });
    }
    const all = [...known.values()].sort((a, b) => a.coordinate.localeCompare(b.coordinate));
    return first === undefined || first === null ? all : all.slice(0, first);
  }
}
