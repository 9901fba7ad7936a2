import type { Configuration, KoaContextWithOIDC } from 'oidc-provider';

/**
 * `offline_access` without `prompt=consent` (docs/oauth.md, "Refresh tokens").
 *
 * OpenID Connect Core section 11 lets a provider ignore `offline_access` unless the request has
 * `prompt=consent`, and oidc-provider drops it from the requested scope. What a partner developer
 * expects instead: ask for `offline_access` like any other scope; the user allows it on the consent
 * page ("Keep this access when you are not using the app"), that consent is remembered like any
 * other, and each code exchange of a request that asked for it returns a refresh token. So the
 * scope is put back into the request when the raw request carried it and the app may use refresh
 * tokens (it registered `offline_access`); from there on it is an ordinary scope: consent prompt
 * while the user's grant lacks it, a refresh token when the code's scope has it (oidc-provider's
 * own `issueRefreshToken`), not bound to the sign-in session.
 *
 * The hook: oidc-provider runs every `extraParams` validator once per authorization request, after
 * its scope check. The parameter itself carries nothing (whatever a client sends under that name
 * is discarded).
 */
const HOOK_PARAM = 'atrium_offline_access';
const OFFLINE_ACCESS = 'offline_access';

/** The scope the request itself carried (query or form), before oidc-provider filtered it. */
function rawScope(ctx: KoaContextWithOIDC): string {
  const source = ctx.method === 'POST' ? ctx.oidc.body : (ctx.query as Record<string, unknown>);
  const scope = source?.scope;
  return typeof scope === 'string' ? scope : '';
}

function keepOfflineAccess(ctx: KoaContextWithOIDC): void {
  const params = ctx.oidc.params as Record<string, unknown>;
  params[HOOK_PARAM] = undefined;
  const scope = typeof params.scope === 'string' ? params.scope.split(' ') : [];
  if (
    !scope.includes(OFFLINE_ACCESS) &&
    rawScope(ctx).split(' ').includes(OFFLINE_ACCESS) &&
    ctx.oidc.client?.grantTypeAllowed('refresh_token')
  ) {
    params.scope = [...scope, OFFLINE_ACCESS].join(' ');
  }
}

export const offlineAccessConfiguration: Pick<Configuration, 'extraParams'> = {
  extraParams: { [HOOK_PARAM]: keepOfflineAccess },
};
