import { Injectable } from '@nestjs/common';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import { resolvedHistogramSeries } from '../common/library-internals.js';
import { BoundedLabel } from './bounded-label.js';

/** Seconds buckets for request-shaped work (1 ms … 10 s). */
const LATENCY_BUCKETS = [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10];
/** Seconds buckets for single statements (0.1 ms … 5 s). */
const QUERY_BUCKETS = [0.0001, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.5, 1, 5];

/** Where the GraphQL operation ran. */
export type GraphqlTransport = 'http' | 'ws';
/**
 * How a GraphQL operation ended: `ok` (no errors), `partial` (data and errors: some fields failed),
 * `error` (no data: refused before or during execution: parse, validation, authentication, cost,
 * rate limit, a failed mutation).
 */
export type GraphqlOutcome = 'ok' | 'partial' | 'error';
/** A rate-limit decision: counted and let through, refused (429), or not made (store unavailable). */
export type RateLimitOutcome = 'allowed' | 'limited' | 'unavailable';

/** What the database pool reports (see `setPoolReader`). */
export interface PoolUsage {
  inUse: number;
  idle: number;
  waiting: number;
  max: number;
}

/** Counter names of the rate limiter (src/rate-limit/) as metric labels. */
const BUCKET_LABELS: Record<string, string> = {
  default: 'requests',
  auth: 'auth',
  'auth-account': 'auth_account',
  cost: 'graphql_cost',
};

type CounterSeries = Counter.Internal;
type HistogramSeries = Histogram.Internal<string>;

interface OperationSeries {
  count: CounterSeries;
  duration: HistogramSeries;
  cost: HistogramSeries;
}

/**
 * The Prometheus registry and every application metric family (docs/operations.md lists them).
 * Names follow Prometheus conventions: `atrium_` prefix, snake_case, base units (seconds), `_total`
 * counters; labels are low-cardinality (route templates, bucket names, bounded operation names).
 *
 * Hot paths call the `record…` methods, which reuse labelled children (no label object per call);
 * gauges that mirror state (pool, sockets) are read when Prometheus scrapes, not on every change.
 */
@Injectable()
export class MetricsService {
  readonly registry = new Registry();

  /** Every HTTP response: `labels(method, route pattern, status).observe(seconds)`. */
  readonly httpDuration = new Histogram({
    name: 'atrium_http_request_duration_seconds',
    help: 'HTTP request duration by method, route pattern and status',
    labelNames: ['method', 'route', 'status'] as const,
    buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
    registers: [this.registry],
  });

  // ---- GraphQL ----------------------------------------------------------------------------------

  /** Client-chosen operation names: the first 100 distinct ones seen, then `other`. */
  readonly operationNames = new BoundedLabel(100, 64);

  readonly graphqlOperations = new Counter({
    name: 'atrium_graphql_operations_total',
    help: 'GraphQL operations by operation name (bounded), type, outcome and transport',
    labelNames: ['operation_name', 'operation_type', 'outcome', 'transport'] as const,
    registers: [this.registry],
  });

  readonly graphqlDuration = new Histogram({
    name: 'atrium_graphql_operation_duration_seconds',
    help: 'GraphQL operation duration (subscriptions: the subscribe step, not their lifetime)',
    labelNames: ['operation_name', 'operation_type', 'outcome', 'transport'] as const,
    buckets: LATENCY_BUCKETS,
    registers: [this.registry],
  });

  readonly graphqlCost = new Histogram({
    name: 'atrium_graphql_operation_cost',
    help: 'Computed cost (points) of GraphQL operations that got as far as costing',
    labelNames: ['operation_type', 'transport'] as const,
    buckets: [1, 2, 5, 10, 25, 50, 100, 250, 500, 1000],
    registers: [this.registry],
  });

  readonly subscriptionsActive = new Gauge({
    name: 'atrium_graphql_subscriptions_active',
    help: 'GraphQL subscriptions running on this instance',
    registers: [this.registry],
  });

  readonly websocketConnections = new Gauge({
    name: 'atrium_websocket_connections',
    help: 'Open WebSocket connections on /graphql (acknowledged or not)',
    registers: [this.registry],
    collect: () => {
      this.websocketConnections.set(this.socketCount?.() ?? 0);
    },
  });

  // ---- events -----------------------------------------------------------------------------------

  readonly eventsPublished = new Counter({
    name: 'atrium_events_published_total',
    help: 'Events published on the bus by this instance, by channel',
    labelNames: ['channel'] as const,
    registers: [this.registry],
  });

  readonly eventLag = new Histogram({
    name: 'atrium_events_delivery_lag_seconds',
    help: 'Time from publish (on any instance) to fan-out to local subscribers, by channel',
    labelNames: ['channel'] as const,
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
    registers: [this.registry],
  });

  readonly eventsDropped = new Counter({
    name: 'atrium_events_dropped_total',
    help: "Events this instance's subscribers will never get, by channel and reason (resync: replaced by RESYNC_REQUIRED; publish_failed: a user event the bus refused)",
    labelNames: ['channel', 'reason'] as const,
    registers: [this.registry],
  });

  readonly eventsPublishFailed = new Counter({
    name: 'atrium_events_publish_failed_total',
    help: 'Publishes the bus refused, by channel (message events still reach subscribers: local delivery and gap fill)',
    labelNames: ['channel'] as const,
    registers: [this.registry],
  });

  readonly eventsGapFilled = new Counter({
    name: 'atrium_events_gap_filled_total',
    help: 'Events the live stream lost that this instance read from the database and delivered, by channel',
    labelNames: ['channel'] as const,
    registers: [this.registry],
  });

  readonly eventsLate = new Counter({
    name: 'atrium_events_late_total',
    help: 'Events that reached this instance after their place was passed (delivered already by a gap fill, or a duplicate), by channel',
    labelNames: ['channel'] as const,
    registers: [this.registry],
  });

  // ---- database ---------------------------------------------------------------------------------

  readonly dbPoolConnections = new Gauge({
    name: 'atrium_db_pool_connections',
    help: 'Database connections by state (in_use, idle)',
    labelNames: ['state'] as const,
    registers: [this.registry],
    collect: () => {
      const usage = this.poolReader?.();
      if (usage) {
        this.dbPoolConnections.set({ state: 'in_use' }, usage.inUse);
        this.dbPoolConnections.set({ state: 'idle' }, usage.idle);
      }
    },
  });

  readonly dbPoolWaiting = new Gauge({
    name: 'atrium_db_pool_waiting',
    help: 'Requests waiting for a database connection (SQLite: for the open transaction)',
    registers: [this.registry],
    collect: () => {
      const usage = this.poolReader?.();
      if (usage) {
        this.dbPoolWaiting.set(usage.waiting);
      }
    },
  });

  readonly dbPoolMax = new Gauge({
    name: 'atrium_db_pool_max_connections',
    help: 'Most connections the pool opens (SQLite: 1)',
    registers: [this.registry],
    collect: () => {
      const usage = this.poolReader?.();
      if (usage) {
        this.dbPoolMax.set(usage.max);
      }
    },
  });

  readonly dbQueryDuration = new Histogram({
    name: 'atrium_db_query_duration_seconds',
    help: 'Database statement duration by outcome (ok, error)',
    labelNames: ['outcome'] as const,
    buckets: QUERY_BUCKETS,
    registers: [this.registry],
  });
  private readonly queryOk = this.dbQueryDuration.labels('ok');
  private readonly queryError = this.dbQueryDuration.labels('error');

  // ---- rate limits ------------------------------------------------------------------------------

  readonly rateLimitDecisions = new Counter({
    name: 'atrium_rate_limit_decisions_total',
    help: 'Rate-limit decisions by bucket and outcome (allowed, limited, unavailable)',
    labelNames: ['bucket', 'outcome'] as const,
    registers: [this.registry],
  });

  private socketCount?: () => number;
  private poolReader?: () => PoolUsage | undefined;
  private readonly operationSeries = new Map<string, OperationSeries>();
  private readonly decisionSeries = new Map<string, CounterSeries>();
  /**
   * httpDuration's series by method, then route pattern, then status (a bounded set: patterns, not
   * paths), each resolved once (resolvedHistogramSeries): no label string or hash per request.
   */
  private readonly httpSeries = new Map<string, Map<string, Map<number, (s: number) => void>>>();

  constructor() {
    collectDefaultMetrics({ register: this.registry, prefix: 'atrium_' });
  }

  /** The WebSocket server tells how many sockets are open (read at scrape time). */
  setSocketCounter(count: () => number): void {
    this.socketCount = count;
  }

  /** The database layer tells its pool usage (read at scrape time). */
  setPoolReader(read: () => PoolUsage | undefined): void {
    this.poolReader = read;
  }

  /**
   * One GraphQL operation: counted, timed and (when costed) its cost observed. `name` is the
   * operation's name as written in the document (bounded here), or `anonymous` / `unknown`.
   */
  recordOperation(
    transport: GraphqlTransport,
    type: string,
    name: string,
    outcome: GraphqlOutcome,
    seconds: number,
    cost: number | undefined,
  ): void {
    const label =
      name === 'anonymous' || name === 'unknown' ? name : this.operationNames.label(name);
    const key = `${transport}\u0000${type}\u0000${outcome}\u0000${label}`;
    let series = this.operationSeries.get(key);
    if (!series) {
      series = {
        count: this.graphqlOperations.labels(label, type, outcome, transport),
        duration: this.graphqlDuration.labels(label, type, outcome, transport),
        cost: this.graphqlCost.labels(type, transport),
      };
      this.operationSeries.set(key, series);
    }
    series.count.inc();
    series.duration.observe(seconds);
    if (cost !== undefined) {
      series.cost.observe(cost);
    }
  }

  /** One answered HTTP request (`route`: the route pattern, `unmatched` or `upgrade`). */
  recordHttp(method: string, route: string, status: number, seconds: number): void {
    let byRoute = this.httpSeries.get(method);
    if (!byRoute) {
      byRoute = new Map();
      this.httpSeries.set(method, byRoute);
    }
    let byStatus = byRoute.get(route);
    if (!byStatus) {
      byStatus = new Map();
      byRoute.set(route, byStatus);
    }
    let observe = byStatus.get(status);
    if (!observe) {
      observe = resolvedHistogramSeries(this.httpDuration, {
        method,
        route,
        status: String(status),
      });
      byStatus.set(status, observe);
    }
    observe(seconds);
  }

  recordQuery(seconds: number, ok: boolean): void {
    (ok ? this.queryOk : this.queryError).observe(seconds);
  }

  /** A decision of the rate limiter's bucket `bucket` (its counter name, e.g. `default`). */
  recordRateLimit(bucket: string, outcome: RateLimitOutcome): void {
    const key = `${bucket}\u0000${outcome}`;
    let child = this.decisionSeries.get(key);
    if (!child) {
      child = this.rateLimitDecisions.labels(BUCKET_LABELS[bucket] ?? bucket, outcome);
      this.decisionSeries.set(key, child);
    }
    child.inc();
  }
}
