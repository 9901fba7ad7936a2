import 'reflect-metadata';
import { DataSource } from 'typeorm';
import { loadConfigFromEnvironment } from '../config/config.js';
import { CountersRepository } from '../database/counters.repository.js';
import { dataSourceOptions } from '../database/database.options.js';
import { DatabaseService } from '../database/database.service.js';

/**
 * `npm run counts:check [-- --fix]`: compares every list counter (`list_counts`, the source of
 * `meta.total` and `totalCount`) with a COUNT(*) of the tables of the configured database
 * (DATABASE_URL) and prints each difference; `--fix` rewrites the counters that differ. Exit code 1
 * when a difference was found and not fixed. Migrations run first, as at boot.
 */
const fix = process.argv.includes('--fix');
const config = loadConfigFromEnvironment();
// TypeORM's console logger with logging off: only this script's own lines reach the terminal
const dataSource = new DataSource({
  ...dataSourceOptions(config.database),
  logger: 'simple-console',
  logging: false,
});
await dataSource.initialize();
try {
  const counters = new CountersRepository(new DatabaseService(dataSource));
  const mismatches = await counters.reconcile(fix);
  for (const m of mismatches) {
    console.log(`${m.key}: counter ${m.stored}, actual ${m.actual}${fix ? ' (fixed)' : ''}`);
  }
  console.log(
    mismatches.length === 0
      ? 'list counters: all equal to COUNT(*)'
      : `list counters: ${mismatches.length} differ${fix ? ', fixed' : ' (run with --fix to rewrite them)'}`,
  );
  process.exitCode = mismatches.length > 0 && !fix ? 1 : 0;
} finally {
  await dataSource.destroy();
}
