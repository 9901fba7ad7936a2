import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { setTimeout as sleep } from 'node:timers/promises';
import { freePort } from './rate-limit.js';
import { scaled } from './time.js';

/** Whether a redis-server binary is installed (the tests that kill and restart Redis need one). */
const hasRedisServer = spawnSync('redis-server', ['--version']).status === 0;

/**
 * Whether the tests on a private redis-server run: where the binary is installed, and always in CI
 * (CI set), where a missing binary fails them (`startPrivateRedis`) instead of skipping them.
 */
export const privateRedisTestsRun = hasRedisServer || Boolean(process.env.CI);

/**
 * A private redis-server started on a free port (the shared Redis is never stopped or flushed); the
 * test kills it in `afterAll`. Throws when redis-server is not installed.
 */
export async function startPrivateRedis(): Promise<PrivateRedis> {
  if (!hasRedisServer) {
    throw new Error('redis-server is not installed: CI needs it (apt-get install redis-server)');
  }
  const redis = new PrivateRedis(await freePort());
  try {
    await redis.start();
  } catch (err) {
    await redis.kill();
    throw err;
  }
  return redis;
}

/** A private, non-persistent redis-server on its own port (started and killed by the test). */
export class PrivateRedis {
  private proc: ChildProcess | undefined;

  constructor(readonly port: number) {}

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  async start(): Promise<void> {
    const proc = spawn(
      'redis-server',
      ['--port', String(this.port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
      {
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    this.proc = proc;
    let out = '';
    proc.stdout?.on('data', (d: Buffer) => (out += d.toString()));
    const deadline = Date.now() + scaled(5_000);
    while (!out.includes('Ready to accept connections')) {
      if (proc.exitCode !== null || Date.now() > deadline) {
        throw new Error(`redis-server did not start on ${this.port}: ${out}`);
      }
      await sleep(20);
    }
  }

  signal(sig: NodeJS.Signals): void {
    this.proc?.kill(sig);
  }

  async kill(): Promise<void> {
    const proc = this.proc;
    if (!proc || proc.exitCode !== null || proc.signalCode !== null) {
      return;
    }
    proc.kill('SIGCONT');
    proc.kill('SIGKILL');
    await once(proc, 'exit');
    this.proc = undefined;
  }
}
