import { execFile } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** `bin/` of the newest PostgreSQL server installed the Debian way, or undefined. */
export function postgresBinDir(): string | undefined {
  const root = '/usr/lib/postgresql';
  if (!existsSync(root)) {
    return undefined;
  }
  const versions = readdirSync(root)
    .filter((v) => existsSync(join(root, v, 'bin', 'initdb')))
    .sort((a, b) => Number(b) - Number(a));
  return versions.length > 0 ? join(root, versions[0], 'bin') : undefined;
}

/**
 * A private PostgreSQL cluster (initdb into a temp dir, its own port), so that a test can stop and
 * start a database server without touching the shared one. PostgreSQL refuses to run as root: when
 * the tests run as root the server runs as the `postgres` OS user (`runuser`).
 */
export class PrivatePostgres {
  private dir: string | undefined;

  constructor(
    private readonly bin: string,
    readonly port: number,
  ) {}

  /** The `postgres` database of the cluster (trust authentication, user postgres). */
  get url(): string {
    return `postgres://postgres@127.0.0.1:${this.port}/postgres`;
  }

  private get data(): string {
    return join(this.dir!, 'data');
  }

  private async exec(tool: string, args: string[]): Promise<void> {
    const cmd = join(this.bin, tool);
    const asRoot = process.getuid?.() === 0;
    await run(asRoot ? 'runuser' : cmd, asRoot ? ['-u', 'postgres', '--', cmd, ...args] : args, {
      timeout: 30_000,
    });
  }

  async init(): Promise<void> {
    this.dir = mkdtempSync(join(tmpdir(), 'atrium-pg-'));
    if (process.getuid?.() === 0) {
      chownSync(this.dir, Number((await run('id', ['-u', 'postgres'])).stdout.trim()), -1);
    }
    await this.exec('initdb', [
      '-D',
      this.data,
      '-U',
      'postgres',
      '-A',
      'trust',
      '-E',
      'UTF8',
      '--no-sync',
    ]);
  }

  /** Starts the server and waits until it accepts connections. */
  async start(): Promise<void> {
    const options = [
      `-p ${this.port}`,
      `-k ${this.dir}`,
      '-c listen_addresses=127.0.0.1',
      // a throw-away cluster: durability against an OS crash is not what these tests check
      '-c fsync=off',
      '-c full_page_writes=off',
      '-c max_connections=50',
    ].join(' ');
    await this.exec('pg_ctl', [
      'start',
      '-w',
      '-D',
      this.data,
      '-l',
      join(this.dir!, 'server.log'),
      '-o',
      options,
    ]);
  }

  /**
   * Stops the server: `immediate` is a crash (backends killed, WAL replayed at the next start),
   * `fast` a clean shutdown (backends terminated with 57P01, then a checkpoint).
   */
  async stop(mode: 'immediate' | 'fast' = 'immediate'): Promise<void> {
    await this.exec('pg_ctl', ['stop', '-w', '-m', mode, '-D', this.data]);
  }

  /** Stops the server (if running) and deletes the cluster. */
  async destroy(): Promise<void> {
    if (!this.dir) {
      return;
    }
    await this.stop('immediate').catch(() => undefined);
    rmSync(this.dir, { recursive: true, force: true });
    this.dir = undefined;
  }
}
