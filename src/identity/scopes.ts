/** OpenID Connect scopes (identity, refresh) and the API scopes an access token can carry. */
const OIDC_SCOPES = ['openid', 'profile', 'email', 'offline_access'] as const;
export const API_SCOPES = [
  'users:read',
  'users:write',
  'orders:read',
  'orders:write',
  'posts:read',
  'posts:write',
  'messages:read',
  'messages:write',
  'admin',
] as const;
export const ALL_SCOPES: readonly string[] = [...OIDC_SCOPES, ...API_SCOPES];

export type ApiScope = (typeof API_SCOPES)[number];

/** Each scope in plain words, as the consent page says it (and docs/oauth.md). */
export const SCOPE_WORDS: Record<string, string> = {
  openid: 'Know who you are (your Atrium account id)',
  profile: 'See your name',
  email: 'See your email address',
  offline_access: 'Keep this access when you are not using the app (until you revoke it)',
  'users:read': 'See user profiles',
  'users:write': 'Change your profile name',
  'orders:read': 'See your orders',
  'orders:write': 'Place and cancel orders for you',
  'posts:read': 'Read posts',
  'posts:write': 'Write, edit and delete posts as you',
  'messages:read': 'Read rooms and messages, and receive new messages as they arrive',
  'messages:write': 'Send messages as you',
  admin:
    'Act as an administrator with your rights, within the other permissions listed: manage other users\u2019 profiles, posts, orders and messages (never anyone\u2019s email, password or role, API keys or partner apps)',
};

export function isApiScope(scope: string): scope is ApiScope {
  return (API_SCOPES as readonly string[]).includes(scope);
}

/** A write scope implies the read scope of the same resource. */
function covers(granted: readonly string[], scope: string): boolean {
  if (granted.includes(scope)) {
    return true;
  }
  return scope.endsWith(':read') && granted.includes(scope.replace(/:read$/, ':write'));
}

/** The required scopes a token's granted scopes do not cover (empty: allowed). */
export function missingScopes(granted: readonly string[], required: readonly string[]): string[] {
  return required.filter((s) => !covers(granted, s));
}

/** `WWW-Authenticate` for a 403 insufficient_scope (RFC 6750 section 3.1). */
export function insufficientScopeChallenge(scopes: readonly string[]): string {
  return `Bearer error="insufficient_scope", scope="${scopes.join(' ')}"`;
}

/** The message of a refusal to a partner app: the scopes it lacks, or not available at all. */
export const NOT_FOR_APPS = 'This operation is not available to partner apps (OAuth access tokens)';
export function lacksScopes(missing: readonly string[]): string {
  return `This token lacks the scope(s): ${missing.join(' ')}`;
}
