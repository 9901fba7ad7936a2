import { execFile } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
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

  /** The server's processes: the postmaster (from postmaster.pid) and its children. */
  private pids(): number[] {
    const postmaster = Number(
      readFileSync(join(this.data, 'postmaster.pid'), 'utf8').split('\n')[0],
    );
    const children = readdirSync('/proc')
      .filter((d) => /^\d+$/.test(d))
      .filter((d) => {
        try {
          // /proc/<pid>/stat: "pid (comm) state ppid ..."; comm may contain spaces
          const stat = readFileSync(`/proc/${d}/stat`, 'utf8');
          return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) === postmaster;
        } catch {
          return false; // exited meanwhile
        }
      })
      .map(Number);
    return [postmaster, ...children];
  }

  /**
   * Freezes (SIGSTOP) or thaws (SIGCONT) every process of the server: a database that accepts TCP
   * connections (the kernel does) but answers nothing, like a hung host or a network partition.
   */
  signal(sig: 'SIGSTOP' | 'SIGCONT'): void {
    for (const pid of this.pids()) {
      try {
        process.kill(pid, sig);
      } catch {
        // exited meanwhile
      }
    }
  }

  /** Stops the server (if running) and deletes the cluster. */
  async destroy(): Promise<void> {
    if (!this.dir) {
      return;
    }
    try {
      this.signal('SIGCONT');
    } catch {
      // not running
    }
    await this.stop('immediate').catch(() => undefined);
    rmSync(this.dir, { recursive: true, force: true });
    this.dir = undefined;
  }
}
