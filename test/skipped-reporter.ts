import { relative } from 'node:path';
import type { Reporter, TestModule } from 'vitest/node';

/**
 * Ends `npm test` with the tests that did not run and why: each skipped suite's title says what it
 * needs (PostgreSQL, Redis, Chromium, a redis-server binary), printed once per suite with how many of
 * its tests were skipped.
 */
export default class SkippedReporter implements Reporter {
  onTestRunEnd(testModules: ReadonlyArray<TestModule>): void {
    const suites = new Map<string, number>();
    for (const module of testModules) {
      for (const test of module.children.allTests('skipped')) {
        const suite = test.parent.type === 'suite' ? test.parent.fullName : test.fullName;
        const key = `${relative(process.cwd(), module.moduleId)}: ${suite}`;
        suites.set(key, (suites.get(key) ?? 0) + 1);
      }
    }
    if (suites.size === 0) {
      return;
    }
    const total = [...suites.values()].reduce((a, b) => a + b, 0);
    const lines = [...suites].map(([suite, n]) => `  - ${suite} (${n})`);
    console.log(`\nSkipped ${total} tests, by suite (the title says why):\n${lines.join('\n')}\n`);
  }
}
