import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';

export const ROOT = new URL('../..', import.meta.url).pathname;

/** Compiles the service (as `npm run build` does) into `outDir`. */
function buildInto(outDir: string): void {
  const tsc = join(ROOT, 'node_modules/typescript/bin/tsc');
  execFileSync(process.execPath, [tsc, '-p', 'tsconfig.build.json', '--outDir', outDir], {
    cwd: ROOT,
    stdio: 'pipe',
  });
}

let ownBuild: string | undefined;

/**
 * The folder of a build of the service (holding main.js) for suites that run it as a process.
 * ATRIUM_TEST_BUILD names one that is already built (CI builds once, then points every suite at
 * dist/); otherwise the service is compiled once per test process into a folder of its own (under
 * the run's ATRIUM_TEST_BUILD_ROOT, which test/global-setup.ts makes and removes; inside the
 * project, so the build finds node_modules), so a suite never races anything rebuilding dist/.
 */
export function serviceBuild(): string {
  const prebuilt = process.env.ATRIUM_TEST_BUILD;
  if (prebuilt) {
    if (!existsSync(join(prebuilt, 'main.js'))) {
      throw new Error(`ATRIUM_TEST_BUILD=${prebuilt} holds no main.js (run npm run build first)`);
    }
    return prebuilt;
  }
  if (ownBuild === undefined) {
    const root =
      process.env.ATRIUM_TEST_BUILD_ROOT ??
      join(ROOT, 'node_modules/.cache/atrium-test-builds/outside-a-run');
    mkdirSync(root, { recursive: true });
    const dir = join(root, `${process.pid}-${randomBytes(4).toString('hex')}`);
    buildInto(dir);
    ownBuild = dir;
  }
  return ownBuild;
}
