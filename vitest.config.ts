import { createRequire } from 'node:module';
import { availableParallelism, loadavg } from 'node:os';
import { defineConfig, type ViteUserConfig } from 'vitest/config';
import suites from './test/suites.json' with { type: 'json' };

const require = createRequire(import.meta.url);

/**
 * test/suites.json names two sets of test files:
 *
 * - `system`: files that run the service or other servers as processes of their own (the built
 *   service, nginx, Chromium, private PostgreSQL and Redis servers): the `system` project. Every other
 *   `test/**\/*.e2e-spec.ts` is in the `e2e` project (a glob: new files join it by themselves).
 * - `sqlite`: the files whose outcome can differ with the database or without Redis: lists, counters,
 *   search, transactions, text, idempotency, the OAuth store, the password and last-admin rules, and
 *   the engines an instance runs in-process when it has no Redis (rate limits, subscriptions, webhook
 *   deliveries). CI runs the whole suite on PostgreSQL + Redis and these files once more on SQLite
 *   (CONTRIBUTING.md, "CI"); `npm test` runs everything on SQLite.
 */
export const SYSTEM_FILES: string[] = suites.system;

const shared: ViteUserConfig = {
  resolve: {
    // one copy of graphql, or "Cannot use GraphQLDirective from another module or realm" (the alias makes vitest and the app load the same file)
    alias: [{ find: /^graphql$/, replacement: require.resolve('graphql') }],
  },
};

/**
 * How much slower than on an idle machine tests may run here: 1 + the one-minute load average per
 * core when the run starts (another build or test run, a busy neighbour), at most 4; the
 * TEST_TIME_FACTOR variable sets it. The default time-outs are scaled by it, and so are the
 * deadlines of tests that use `scaled()` (test/helpers/time.ts), which read it from the environment.
 */
function timeFactor(): number {
  const given = Number(process.env.TEST_TIME_FACTOR);
  if (given > 0) {
    return given;
  }
  const [oneMinute = 0] = loadavg();
  return Math.min(4, Math.round((1 + oneMinute / availableParallelism()) * 100) / 100);
}
const factor = timeFactor();
process.env.TEST_TIME_FACTOR = String(factor);

const timeouts = {
  testTimeout: Math.round(30_000 * factor),
  hookTimeout: Math.round(60_000 * factor),
};

export default defineConfig({
  ...shared,
  test: {
    // runs once per `vitest run` (in the main process), whichever projects are selected
    globalSetup: ['test/global-setup.ts'],
    // `npm test` ends with the skipped suites and why (CI names its own reporters and lists them too)
    reporters: ['default', './test/skipped-reporter.ts'],
    ...timeouts,
    projects: [
      {
        ...shared,
        test: {
          name: 'unit',
          include: ['src/**/*.spec.ts'],
          pool: 'forks',
          isolate: false,
          ...timeouts,
        },
      },
      {
        ...shared,
        test: {
          name: 'e2e',
          include: ['test/**/*.e2e-spec.ts'],
          exclude: SYSTEM_FILES,
          pool: 'forks',
          // the app's modules are imported once per worker, not once per file (files share no state
          // but the app's caches, which hold no per-app values)
          isolate: false,
          ...timeouts,
        },
      },
      {
        ...shared,
        test: {
          // the application's modules and a real database without a transport: services called
          // directly with a caller of each role (test/helpers/service.ts), for rules the e2e tests
          // reach only through HTTP
          name: 'service',
          include: ['test/service/**/*.service-spec.ts'],
          pool: 'forks',
          isolate: false,
          ...timeouts,
        },
      },
      {
        ...shared,
        test: {
          name: 'system',
          include: SYSTEM_FILES,
          pool: 'forks',
          isolate: false,
          ...timeouts,
        },
      },
    ],
  },
});
