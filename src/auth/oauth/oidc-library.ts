import { AsyncLocalStorage } from 'node:async_hooks';
import { Logger } from '@nestjs/common';
import { runtimeFlags } from '../../config/config.js';

/**
 * oidc-provider, loaded when the application is built rather than when its modules are imported:
 * importing it prints a runtime notice on Node 20 ("Unsupported runtime", it works), and a process
 * that stops on a configuration error must print exactly one line (see src/config/). The notice
 * goes to the application's log (a JSON line) instead of raw stderr.
 */
export type OidcLibrary = typeof import('oidc-provider');

export const OIDC_LIBRARY = Symbol('OIDC_LIBRARY');

/**
 * A plain object copy of the module namespace: Nest's GraphQL explorer reads metadata from every
 * provider's `constructor`, which a namespace object lacks.
 */
export async function loadOidcLibrary(): Promise<OidcLibrary> {
  const logger = new Logger('OAuth');
  const warn = console.warn;
  console.warn = (...args: unknown[]) => {
    const line = args.map((a) => (typeof a === 'string' ? a : JSON.stringify(a))).join(' ');
    if (line.startsWith('oidc-provider ')) {
      logger.warn(line);
    } else {
      warn(...args);
    }
  };
  try {
    return { ...(await import('oidc-provider')) };
  } finally {
    console.warn = warn;
  }
}

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

/**
 * oidc-provider keeps each of its requests' context in an AsyncLocalStorage (its own module, read
 * only by the client ID metadata document feature, which Atrium leaves off). Where that storage runs
 * on promise hooks (Node 20 and 22, see `storageUsesPromiseHooks`), a storage's first `run()` turns
 * them on for the whole process, and they stay on: after one OAuth request, every promise of every
 * later request (REST, GraphQL, WebSocket) paid for them, ~10 % of a REST GET's CPU
 * (docs/performance.md). There `inProviderContext` counts the provider's requests in flight and
 * disables the storage once none is left; the next request's `run()` enables it again. On Node 24
 * nothing needs releasing and the provider's module is not reached into.
 */
const RELEASE_STORAGE = storageUsesPromiseHooks();
let providerStorage: AsyncLocalStorage<unknown> | null | undefined;
let providerRequests = 0;

async function loadProviderStorage(): Promise<AsyncLocalStorage<unknown> | null> {
  // a path in a variable: the module has no type declarations (and no `exports` map to forbid it)
  const path = 'oidc-provider/lib/helpers/als.js';
  try {
    const loaded = (await import(path)) as { default?: unknown };
    return loaded.default instanceof AsyncLocalStorage ? loaded.default : null;
  } catch {
    return null; // another layout: nothing to release
  }
}

/** Runs one request through oidc-provider (see above). */
export async function inProviderContext<T>(handle: () => Promise<T>): Promise<T> {
  if (!RELEASE_STORAGE) {
    return handle();
  }
  if (providerStorage === undefined) {
    providerStorage = await loadProviderStorage();
  }
  providerRequests += 1;
  try {
    return await handle();
  } finally {
    providerRequests -= 1;
    if (providerRequests === 0) {
      providerStorage?.disable();
    }
  }
}
