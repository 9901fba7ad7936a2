import { createRequire } from 'node:module';
import { defineConfig, type ViteUserConfig } from 'vitest/config';

const require = createRequire(import.meta.url);

/**
 * Files that run the service or other servers as processes of their own (the built service, nginx,
 * Chromium, private PostgreSQL and Redis servers): the `system` project. Every other
 * `test/**\/*.e2e-spec.ts` is in the `e2e` project (a glob: new files join it by themselves).
 */
export const SYSTEM_FILES = [
  'test/process.e2e-spec.ts',
  'test/deploy.e2e-spec.ts',
  'test/log-redaction.e2e-spec.ts',
  'test/graphql-ide-browser.e2e-spec.ts',
  'test/oauth-browser.e2e-spec.ts',
  'test/oauth-quickstart.e2e-spec.ts',
  'test/db-connection-loss.e2e-spec.ts',
  'test/rate-limit-redis.e2e-spec.ts',
  'test/subscriptions-redis-outage.e2e-spec.ts',
  'test/webhooks-doc.e2e-spec.ts',
];

const shared: ViteUserConfig = {
  resolve: {
    // one copy of graphql, or "Cannot use GraphQLDirective from another module or realm" (the alias makes vitest and the app load the same file)
    alias: [{ find: /^graphql$/, replacement: require.resolve('graphql') }],
  },
};

const timeouts = { testTimeout: 30_000, hookTimeout: 60_000 };

export default defineConfig({
  ...shared,
  test: {
    // runs once per `vitest run` (in the main process), whichever projects are selected
    globalSetup: ['test/global-setup.ts'],
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
