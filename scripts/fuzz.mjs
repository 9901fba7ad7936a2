// The long fuzz run (docs/limits.md, "Fuzzing"): test/fuzz.e2e-spec.ts with more runs and a new seed.
//   npm run fuzz                                  # FUZZ_RUNS=3000 per property, a random seed
//   FUZZ_RUNS=20000 FUZZ_SEED=42 npm run fuzz      # longer, or replay a seed
//   npm run fuzz -- -t GraphQL                     # one property (extra arguments go to vitest)
// With DATABASE_URL / REDIS_URL set it runs on PostgreSQL + Redis, as the suite does. A failure
// prints the seed, the counterexample and the command that replays it.
import { spawnSync } from 'node:child_process';
import { randomInt } from 'node:crypto';

const env = { ...process.env };
env.FUZZ_RUNS ||= '3000';
env.FUZZ_SEED ||= String(randomInt(2 ** 31 - 1));
console.log(`fuzz: FUZZ_RUNS=${env.FUZZ_RUNS} FUZZ_SEED=${env.FUZZ_SEED}`);
const r = spawnSync('npx', ['vitest', 'run', 'test/fuzz.e2e-spec.ts', ...process.argv.slice(2)], {
  stdio: 'inherit',
  env,
});
if (r.status !== 0) {
  console.log(
    `\nfuzz failed: replay the whole run with FUZZ_RUNS=${env.FUZZ_RUNS} FUZZ_SEED=${env.FUZZ_SEED} npm run fuzz`,
  );
}
process.exit(r.status ?? 1);
