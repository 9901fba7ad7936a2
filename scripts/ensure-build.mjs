// `npm start` right after `npm ci`: build once when there is no build output yet.
import { existsSync } from 'node:fs';
import { execSync } from 'node:child_process';

if (!existsSync(new URL('../dist/main.js', import.meta.url))) {
  console.error('[atrium] no build output found: running `npm run build` once');
  execSync('npm run build', { stdio: 'inherit', cwd: new URL('..', import.meta.url) });
}
