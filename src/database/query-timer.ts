import type {
  AfterQueryEvent,
  BeforeQueryEvent,
  EntitySubscriberInterface,
  QueryRunner,
} from 'typeorm';
import type { MetricsService } from '../metrics/metrics.service.js';

/** When the statement now running on a query runner started (performance.now()). */
const STARTED = Symbol('statementStarted');

/**
 * Statement durations (`atrium_db_query_duration_seconds`) of everything TypeORM runs, from its
 * before/after-query events (the SQLite fast path of `DatabaseService.query` times itself).
 */
export function queryTimer(metrics: MetricsService): EntitySubscriberInterface {
  return {
    beforeQuery(event: BeforeQueryEvent) {
      (event.queryRunner as QueryRunner & { [STARTED]?: number })[STARTED] = performance.now();
    },
    afterQuery(event: AfterQueryEvent) {
      const started = (event.queryRunner as QueryRunner & { [STARTED]?: number })[STARTED];
      if (started !== undefined) {
        metrics.recordQuery((performance.now() - started) / 1000, event.success);
      }
    },
  };
}
