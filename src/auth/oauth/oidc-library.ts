import { Logger } from '@nestjs/common';

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
