import { AsyncLocalStorage } from 'node:async_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { StorageRelease, storageUsesPromiseHooks } from './storage-release.js';

describe('storageUsesPromiseHooks (where a storage is released)', () => {
  it('is true on Node 20 and 22, false on Node 24 and later', () => {
    expect(storageUsesPromiseHooks('20.19.0', [])).toBe(true);
    expect(storageUsesPromiseHooks('22.15.0', [])).toBe(true);
    expect(storageUsesPromiseHooks('24.11.0', [])).toBe(false);
    expect(storageUsesPromiseHooks('25.0.0', [])).toBe(false);
  });

  it('follows the async context frame flags', () => {
    expect(storageUsesPromiseHooks('24.11.0', ['--no-async-context-frame'])).toBe(true);
    expect(storageUsesPromiseHooks('22.15.0', ['--experimental-async-context-frame'])).toBe(false);
  });
});

describe('StorageRelease', () => {
  it('disables the storage only when the last run in flight ends', async () => {
    const storage = new AsyncLocalStorage<string>();
    let disabled = 0;
    const original = storage.disable.bind(storage);
    storage.disable = () => {
      disabled += 1;
      original();
    };
    const release = new StorageRelease(storage, true);
    const seen: (string | undefined)[] = [];
    const run = (value: string, ms: number) =>
      release.around(() =>
        storage.run(value, async () => {
          await sleep(ms);
          seen.push(storage.getStore()); // still its own store after the await
          return value;
        }),
      );
    const slow = run('slow', 30);
    expect(await run('fast', 1)).toBe('fast');
    // the fast run ended while the slow one was in flight: nothing released yet
    expect(disabled).toBe(0);
    expect(await slow).toBe('slow');
    expect(seen).toEqual(['fast', 'slow']);
    expect(disabled).toBe(1);
    // a later run enables the storage again
    expect(await run('again', 1)).toBe('again');
    expect(seen[2]).toBe('again');
    expect(disabled).toBe(2);
  });

  it('only runs the work where nothing needs releasing', async () => {
    const storage = new AsyncLocalStorage<string>();
    let disabled = 0;
    storage.disable = () => {
      disabled += 1;
    };
    const release = new StorageRelease(storage, false);
    expect(await release.around(() => storage.run('x', () => Promise.resolve(1)))).toBe(1);
    expect(disabled).toBe(0);
  });
});
