import type {
  AfterQueryEvent,
  BeforeQueryEvent,
  EntitySubscriberInterface,
  QueryRunner,
} from 'typeorm';
import type { Span } from '@opentelemetry/api';
import { endSqlSpan, startSqliteSpan } from '../telemetry/tracing.js';

/** The span of the statement now running on a query runner. */
const SPAN = Symbol('statementSpan');

/**
 * With tracing on, a span per SQLite statement TypeORM runs (repositories, transactions), from its
 * before/after-query events, as `queryTimer` times them; `DatabaseService.query`'s fast path makes
 * its own. The statement text only: its values are parameters and never recorded.
 */
export function sqliteStatementSpans(): EntitySubscriberInterface {
  return {
    beforeQuery(event: BeforeQueryEvent) {
      (event.queryRunner as QueryRunner & { [SPAN]?: Span })[SPAN] = startSqliteSpan(event.query);
    },
    afterQuery(event: AfterQueryEvent) {
      const runner = event.queryRunner as QueryRunner & { [SPAN]?: Span };
      endSqlSpan(runner[SPAN], event.success ? undefined : event.error);
      runner[SPAN] = undefined;
    },
  };
}
