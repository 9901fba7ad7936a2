/**
 * oidc-provider, loaded when the application is built rather than when its modules are imported:
 * importing it prints a runtime notice on Node 20 ("Unsupported runtime", it works), and a process
 * that stops on a configuration error must print exactly one line (see src/config/).
 */
export type OidcLibrary = typeof import('oidc-provider');

export const OIDC_LIBRARY = Symbol('OIDC_LIBRARY');

/**
 * A plain object copy of the module namespace: Nest's GraphQL explorer reads metadata from every
 * provider's `constructor`, which a namespace object lacks.
 */
export async function loadOidcLibrary(): Promise<OidcLibrary> {
  return { ...(await import('oidc-provider')) };
}
