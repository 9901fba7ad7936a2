// A fixed reference computation, timed on the servers' CPU in every round of bench/run.mjs, so a
// loaded machine shows in the output: on a quiet machine its wall time equals its CPU time and its
// CPU time stays put from run to run; another process on the same core stretches the wall time, and
// a busy neighbour core (shared caches, memory bandwidth) raises the CPU time as well. Read the bare
// handler's µs per request next to it.
//
//   node bench/reference.mjs        # prints {"cpuUs":...,"wallUs":...} for one unit of work
//
// One unit: 200 JSON round trips of a 20-user page and a sort of 2,000 numbers (~5 ms of CPU).
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const page = {
  data: Array.from({ length: 20 }, (_, i) => ({
    id: `usr_${String(i).padStart(26, '0')}`,
    name: `User ${i}`,
    email: `user-${i}@example.com`,
    role: i % 5 === 0 ? 'ADMIN' : 'USER',
    createdAt: '2026-11-29T00:00:00.000Z',
  })),
};

function unit() {
  let n = 0;
  for (let i = 0; i < 200; i++) {
    n += JSON.parse(JSON.stringify(page)).data.length;
  }
  const numbers = Array.from({ length: 2000 }, (_, i) => (i * 7919) % 2003);
  numbers.sort((a, b) => a - b);
  return n + numbers[0];
}

function measure() {
  for (let i = 0; i < 20; i++) {
    unit(); // warm-up: optimised code only
  }
  const runs = [];
  for (let i = 0; i < 15; i++) {
    const cpu = process.cpuUsage();
    const t0 = process.hrtime.bigint();
    unit();
    const wallUs = Number(process.hrtime.bigint() - t0) / 1000;
    const used = process.cpuUsage(cpu);
    runs.push({ cpuUs: used.user + used.system, wallUs });
  }
  const median = (key) => runs.map((r) => r[key]).sort((a, b) => a - b)[7];
  return { cpuUs: median('cpuUs'), wallUs: median('wallUs') };
}

/** One timing of the reference unit in a fresh process, pinned to `cpu` when given. */
export function referenceTiming(cpu) {
  const me = fileURLToPath(import.meta.url);
  const [cmd, argv] =
    cpu === undefined
      ? [process.execPath, [me]]
      : ['taskset', ['-c', String(cpu), process.execPath, me]];
  const r = spawnSync(cmd, argv, { encoding: 'utf8' });
  if (r.status !== 0) {
    throw new Error(`bench/reference.mjs failed: ${r.stderr}`);
  }
  return JSON.parse(r.stdout);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  console.log(JSON.stringify(measure()));
}
