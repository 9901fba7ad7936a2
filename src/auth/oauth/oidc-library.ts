import type { AsyncLocalStorage } from 'node:async_hooks';
import { Logger } from '@nestjs/common';
import { oidcProviderStorage } from '../../common/library-internals.js';
import { StorageRelease, storageUsesPromiseHooks } from '../../common/storage-release.js';

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
 * oidc-provider keeps each of its requests' context in an AsyncLocalStorage (its own module, read
 * only by the client ID metadata document feature, which Atrium leaves off; reached through
 * src/common/library-internals.ts). Where that storage runs
 * on promise hooks (Node 20 and 22), its first `run()` turns them on for the whole process: after
 * one OAuth request every promise of every later request (REST, GraphQL, WebSocket) paid for them,
 * ~10 % of a REST GET's CPU (docs/performance.md). `inProviderContext` releases it once no provider
 * request is in flight (src/common/storage-release.ts). On Node 24 nothing needs releasing and the
 * provider's module is not reached into.
 */
let providerStorage: AsyncLocalStorage<unknown> | null | undefined;
const release = new StorageRelease(() => providerStorage);

/** Runs one request through oidc-provider (see above). */
export async function inProviderContext<T>(handle: () => Promise<T>): Promise<T> {
  if (storageUsesPromiseHooks() && providerStorage === undefined) {
    providerStorage = await oidcProviderStorage();
  }
  return release.around(handle);
}
