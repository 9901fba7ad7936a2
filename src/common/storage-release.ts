import type { AsyncLocalStorage } from 'node:async_hooks';
import { runtimeFlags } from '../config/config.js';

/**
 * Whether AsyncLocalStorage runs on promise hooks here. Node 24 keeps the store in the async context
 * frame instead (its default; `--no-async-context-frame` switches back), which costs nothing for
 * promises that never read it; Node 20 and 22 use promise hooks.
 */
export function storageUsesPromiseHooks(
  version = process.versions.node,
  execArgv: readonly string[] = runtimeFlags(),
): boolean {
  const major = Number(version.split('.')[0]);
  if (execArgv.includes('--no-async-context-frame')) {
    return true;
  }
  return major < 24 && !execArgv.includes('--experimental-async-context-frame');
}

const RELEASE = storageUsesPromiseHooks();

/**
 * For an AsyncLocalStorage used now and then (a dry run, an OAuth request). Where it runs on promise
 * hooks (Node 20 and 22), a storage's first `run()` turns them on for the whole process and they stay
 * on: every promise of every later request pays for them (~40 µs of a REST GET on Node 20,
 * docs/performance.md). `around` counts the runs in flight and disables the storage once none is
 * left; the next `run()` enables it again. On Node 24 it only runs `work`.
 */
export class StorageRelease {
  private inFlight = 0;

  /** `storage`: the storage, or a function giving it once it is known (null: nothing to release). */
  constructor(
    private readonly storage:
      | AsyncLocalStorage<unknown>
      | (() => AsyncLocalStorage<unknown> | null | undefined),
    private readonly release = RELEASE,
  ) {}

  async around<R>(work: () => Promise<R>): Promise<R> {
    if (!this.release) {
      return work();
    }
    this.inFlight += 1;
    try {
      return await work();
    } finally {
      this.inFlight -= 1;
      if (this.inFlight === 0) {
        (typeof this.storage === 'function' ? this.storage() : this.storage)?.disable();
      }
    }
  }
}
