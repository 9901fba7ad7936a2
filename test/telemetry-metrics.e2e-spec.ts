import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CHANNELS, PUB_SUB } from '../src/events/events.service.js';
import type { PubSubEngine } from 'graphql-subscriptions';
import { startApp, type TestApp } from './helpers/app.js';
import { adminClient, createUser, unique } from './helpers/factories.js';
import { request } from './helpers/http.js';
import {
  findPromtool,
  parseExposition,
  promtoolCheck,
  total,
  type Family,
} from './helpers/metrics.js';
import { connect, gql, listening, subscribe } from './subscriptions-helpers.js';
import { TOPICS } from '../src/events/events.service.js';
import { MetricsService } from '../src/metrics/metrics.service.js';

/**
 * `/metrics` after real traffic: REST, GraphQL over HTTP, a graphql-ws subscription that receives
 * an event, and a 429. Every application family must be present in a well-formed exposition
 * (a strict parser here, and `promtool check metrics` where promtool is installed) and must
 * have moved.
 */
describe('/metrics after traffic', () => {
  let t: TestApp;
  const LIMIT = 40;

  beforeAll(async () => {
    t = await startApp({ RATE_LIMIT: String(LIMIT) });
  });

  afterAll(async () => {
    await t?.close();
  });

  async function scrape(): Promise<{ text: string; families: Map<string, Family> }> {
    const res = await request(t.url, '/metrics');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toContain('text/plain; version=0.0.4');
    return { text: res.text, families: parseExposition(res.text) };
  }

  it('has every family, well-formed, and each one moves with REST, GraphQL, WebSocket and a 429', async () => {
    const before = (await scrape()).families;

    // REST and GraphQL over HTTP (a named query, and one that fails validation)
    const admin = await adminClient(t.url);
    expect((await admin.get('/api/v1/users?limit=5')).status).toBe(200);
    const alice = await createUser(t.url);
    const ok = await gql(t.url, { bearer: alice.token }, 'query TelemetryProbe { me { id } }');
    expect(ok.errors).toBeUndefined();
    const bad = await gql(t.url, { bearer: alice.token }, 'query TelemetryBroken { nope }');
    expect(bad.errors?.length).toBeGreaterThan(0);

    // a subscription over WebSocket that receives an event
    const room = (await alice.client.post('/api/v1/rooms', { name: unique('room-') })).body.data
      .id as string;
    const socket = await connect(t.url, { bearer: alice.token });
    const sub = subscribe(
      socket,
      'subscription TelemetryWatch($r: ID!) { messageAdded(roomId: $r) { id content } }',
      { r: room },
    );
    await listening(t, TOPICS.messageAdded(room));
    const during = (await scrape()).families;
    expect(total(during, 'atrium_websocket_connections')).toBeGreaterThanOrEqual(1);
    expect(total(during, 'atrium_graphql_subscriptions_active')).toBeGreaterThanOrEqual(1);
    const sent = await alice.client.post(`/api/v1/rooms/${room}/messages`, { content: 'hi' });
    expect(sent.status).toBe(201);
    await sub.waitFor(1);

    // the same event again on the bus, as a late publisher would send it: not delivered again (late)
    const bus = t.app.get<PubSubEngine>(PUB_SUB);
    await bus.publish(CHANNELS.messageSent, {
      message: { ...sent.body.data, roomId: room },
      seq: 1,
      publishedAt: Date.now(),
    });

    // a caller that spends its request bucket: 429
    const bob = await createUser(t.url);
    let status = 200;
    for (let i = 0; i <= LIMIT && status !== 429; i++) {
      status = (await bob.client.get('/api/v1/auth/me')).status;
    }
    expect(status).toBe(429);

    sub.stop();
    await socket.dispose();

    const { text, families: after } = await scrape();
    await expect
      .poll(async () => total((await scrape()).families, 'atrium_graphql_subscriptions_active'))
      .toBe(total(before, 'atrium_graphql_subscriptions_active'));

    const moved = (sample: string, labels: Record<string, string> = {}) =>
      expect(
        total(after, sample, labels),
        `${sample} ${JSON.stringify(labels)} should have moved`,
      ).toBeGreaterThan(total(before, sample, labels));

    moved('atrium_http_request_duration_seconds_count', { route: '/api/v1/users' });
    moved('atrium_graphql_operations_total', {
      operation_name: 'TelemetryProbe',
      operation_type: 'query',
      outcome: 'ok',
      transport: 'http',
    });
    moved('atrium_graphql_operations_total', { outcome: 'error', transport: 'http' });
    moved('atrium_graphql_operations_total', {
      operation_name: 'TelemetryWatch',
      operation_type: 'subscription',
      outcome: 'ok',
      transport: 'ws',
    });
    moved('atrium_graphql_operation_duration_seconds_count', { operation_name: 'TelemetryProbe' });
    moved('atrium_graphql_operation_cost_count', { operation_type: 'query', transport: 'http' });
    moved('atrium_graphql_operation_cost_count', {
      operation_type: 'subscription',
      transport: 'ws',
    });
    moved('atrium_events_published_total', { channel: 'message_sent' });
    moved('atrium_events_delivery_lag_seconds_count', { channel: 'message_sent' });
    moved('atrium_events_late_total', { channel: 'message_sent' });
    moved('atrium_db_query_duration_seconds_count', { outcome: 'ok' });
    moved('atrium_rate_limit_decisions_total', { bucket: 'requests', outcome: 'allowed' });
    moved('atrium_rate_limit_decisions_total', { bucket: 'requests', outcome: 'limited' });
    moved('atrium_process_cpu_seconds_total');

    // gauges: present with a sample (the pool's in-use and idle connections, the waiting requests)
    for (const gauge of [
      'atrium_db_pool_connections',
      'atrium_db_pool_waiting',
      'atrium_db_pool_max_connections',
      'atrium_websocket_connections',
      'atrium_graphql_subscriptions_active',
      'atrium_nodejs_eventloop_lag_seconds',
    ]) {
      expect(after.get(gauge)?.type, gauge).toBe('gauge');
      expect(after.get(gauge)?.samples.length, gauge).toBeGreaterThan(0);
    }
    expect(total(after, 'atrium_db_pool_max_connections')).toBeGreaterThanOrEqual(1);
    expect(
      total(after, 'atrium_db_pool_connections', { state: 'in_use' }) +
        total(after, 'atrium_db_pool_connections', { state: 'idle' }),
    ).toBeGreaterThanOrEqual(1);

    // conventions: counters end in _total, every family has help text, no raw paths or ids in labels
    for (const [name, family] of after) {
      expect(family.help, name).not.toBe('');
      if (family.type === 'counter') {
        expect(name).toMatch(/_total$/);
      }
      for (const s of family.samples) {
        for (const value of Object.values(s.labels)) {
          expect(value, `${s.name} label`).not.toMatch(/(usr|rom|msg|key|pst|ord)_[0-9A-Z]{26}/);
        }
      }
    }

    // the Grafana dashboard queries only families that exist
    const dashboard = readFileSync(
      new URL('../deploy/grafana-dashboard.json', import.meta.url),
      'utf8',
    );
    const queried = new Set(
      [...dashboard.matchAll(/\batrium_[a-z0-9_]+/g)].map(([name]) =>
        name.replace(/_(bucket|count|sum)$/, ''),
      ),
    );
    expect(queried.size).toBeGreaterThan(15);
    for (const name of queried) {
      expect(after.has(name), `dashboard queries ${name}`).toBe(true);
    }

    const promtool = findPromtool(process.env);
    if (promtool) {
      // promtool's only complaints may be about three gauges of prom-client's default collectors
      // (named *_total by prom-client); nothing about the application's own families
      const { problems } = promtoolCheck(promtool, text);
      const known =
        /^atrium_nodejs_active_(handles|requests|resources)_total non-counter metrics should not have "_total" suffix$/;
      expect(problems.filter((p) => !known.test(p))).toEqual([]);
    }
  });
});

describe('GraphQL operation names in metrics', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await startApp();
  });

  afterAll(async () => {
    await t?.close();
  });

  it('are bounded: past the first 100 distinct names every new one is counted as `other`', async () => {
    const alice = await createUser(t.url);
    const names = t.app.get(MetricsService).operationNames;
    // fill the slots still free with names of this test, then one more
    const fresh = Array.from(
      { length: names.max - names.size + 1 },
      (_, i) => `Many${unique('')}N${i}`,
    );
    for (const name of fresh) {
      const body = await gql(t.url, { bearer: alice.token }, `query ${name} { me { id } }`);
      expect(body.errors).toBeUndefined();
    }
    const after = parseExposition((await request(t.url, '/metrics')).text);
    const count = (name: string) =>
      total(after, 'atrium_graphql_operations_total', { operation_name: name });
    expect(count(fresh.at(-2)!)).toBe(1);
    expect(count(fresh.at(-1)!)).toBe(0);
    expect(count('other')).toBeGreaterThanOrEqual(1);
  });
});
