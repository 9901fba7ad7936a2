import type { WebhooksConfig } from '../../config/config.js';
import type { DatabaseService } from '../../database/database.service.js';
import type {
  AttemptResult,
  WebhookDeliveriesRepository,
  WebhookDeliveryRow,
} from '../webhook-deliveries.repository.js';
import type {
  WebhookEndpointRow,
  WebhookEndpointsRepository,
} from '../webhook-endpoints.repository.js';
import type { DeliveryOutcome } from '../webhook-metrics.js';
import type { ScheduledAttempt } from '../webhook-scheduler.js';

/** An attempt's outcome, kept until it is written. */
export interface HeldOutcome {
  /** The row as the claim returned it (its attempts before this one, its lease). */
  row: WebhookDeliveryRow;
  endpoint: WebhookEndpointRow;
  result: AttemptResult;
  outcome: DeliveryOutcome;
  /** When the receiver answered. */
  at: string;
}

/** What a committed batch leaves to do: retries to queue, endpoints to disable. */
export interface CommittedBatch {
  retries: ScheduledAttempt[];
  gone: string[];
  /** Endpoints failing since, and for how long at the batch's last outcome. */
  failing: { id: string; seconds: number; why: string }[];
  recovered: string[];
}

/**
 * Writes a batch of outcomes in one transaction: the rows (succeeded, retried at their next time,
 * or failed for good), and the endpoints' failing state. `failingHere` is the set of endpoints this
 * instance marked failing (their next success clears the mark). Throws when the transaction does not
 * commit, and then nothing of the batch is written (the caller keeps it and writes it again).
 */
export async function commitOutcomes(
  db: DatabaseService,
  deliveries: WebhookDeliveriesRepository,
  endpoints: WebhookEndpointsRepository,
  config: WebhooksConfig,
  failingHere: ReadonlySet<string>,
  batch: readonly HeldOutcome[],
): Promise<CommittedBatch> {
  const retries: ScheduledAttempt[] = [];
  const gone = new Set<string>();
  /** Per endpoint, in order: when its current run of failures began (null: its last one succeeded). */
  const state = new Map<string, { failedSince: string | null }>();
  const successes: { id: string; attempts: number; result: AttemptResult; at: string }[] = [];
  const failures: {
    id: string;
    attempts: number;
    result: AttemptResult;
    next: string | null;
    at: string;
  }[] = [];
  for (const { row, endpoint, result, outcome, at } of batch) {
    const s = state.get(endpoint.id) ?? { failedSince: null };
    state.set(endpoint.id, s);
    const attempts = Number(row.attempts);
    if (outcome === 'succeeded') {
      successes.push({ id: row.id, attempts, result, at });
      s.failedSince = null;
      continue;
    }
    if (outcome === 'gone') {
      failures.push({ id: row.id, attempts, result, next: null, at });
      gone.add(endpoint.id);
      continue;
    }
    const delayS = config.retryScheduleS[attempts];
    const delayMs = delayS === undefined ? undefined : delayS * 1000 * (0.9 + Math.random() * 0.2);
    failures.push({
      id: row.id,
      attempts,
      result,
      next: delayMs === undefined ? null : new Date(Date.now() + delayMs).toISOString(),
      at,
    });
    if (delayMs !== undefined) {
      retries.push({ id: row.id, attempts: attempts + 1, delayMs, endpointId: row.endpoint_id });
    }
    s.failedSince ??= at;
  }
  /** The endpoints whose failing streak this batch starts or goes on with, and those it ends. */
  const marking: { id: string; failedSince: string }[] = [];
  const recovered: string[] = [];
  for (const [id, { failedSince }] of state) {
    if (gone.has(id)) {
      continue;
    }
    if (failedSince === null) {
      // failing as read at claim time, or marked so by this instance since
      if (
        failingHere.has(id) ||
        batch.some((o) => o.endpoint.id === id && o.endpoint.failing_since !== null)
      ) {
        recovered.push(id);
      }
    } else {
      marking.push({ id, failedSince });
    }
  }
  const failing = await db.transaction(async ({ manager }) => {
    // endpoint rows before delivery rows, as deleting or disabling an endpoint locks them: in the
    // other order this transaction and an endpoint's deletion could wait for each other (PostgreSQL
    // then aborts one of them: a 500 for the DELETE)
    await endpoints.lockMany(manager, [...marking.map((m) => m.id), ...recovered]);
    await deliveries.recordSuccesses(manager, successes);
    for (const f of failures) {
      await deliveries.recordFailure(manager, f.id, f.attempts, f.result, f.next, f.at);
    }
    const marked: CommittedBatch['failing'] = [];
    for (const { id, failedSince } of marking) {
      const since = await endpoints.markFailing(manager, id, failedSince);
      const last = batch.findLast((o) => o.endpoint.id === id);
      const at = last?.at ?? failedSince;
      marked.push({
        id,
        seconds: (Date.parse(at) - Date.parse(since)) / 1000,
        why: last?.result.error ?? `HTTP ${last?.result.statusCode}`,
      });
    }
    await endpoints.clearFailing(manager, recovered);
    return marked;
  });
  return { retries, gone: [...gone], failing, recovered };
}
