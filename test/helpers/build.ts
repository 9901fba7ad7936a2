import { execFileSync } from 'node:child_process';
import { join } from 'node:path';

export const ROOT = new URL('../..', import.meta.url).pathname;

/**
 * Compiles the service (as `npm run build` does) into `outDir`, a folder of the suite's own, so a
 * suite running `node <outDir>/main.js` never races another suite rebuilding dist/. `incremental`
 * keeps tsc's build info in it, for a folder that outlives the run.
 */
export function buildInto(outDir: string, incremental = false): void {
  const args = [join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.build.json'];
  args.push('--outDir', outDir);
  if (incremental) {
    args.push('--incremental', '--tsBuildInfoFile', join(outDir, '.tsbuildinfo'));
  }
  execFileSync(process.execPath, args, { cwd: ROOT, stdio: 'pipe' });
}
