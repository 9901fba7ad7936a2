/** OpenID Connect scopes (identity, refresh) and the API scopes an access token can carry. */
export const OIDC_SCOPES = ['openid', 'profile', 'email', 'offline_access'] as const;
export const API_SCOPES = [
  'users:read',
  'users:write',
  'orders:read',
  'orders:write',
  'posts:read',
  'posts:write',
  'messages:read',
  'messages:write',
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
  'users:write': 'Change your profile',
  'orders:read': 'See your orders',
  'orders:write': 'Place and cancel orders for you',
  'posts:read': 'Read posts',
  'posts:write': 'Write, edit and delete posts as you',
  'messages:read': 'Read rooms and messages, and receive new messages as they arrive',
  'messages:write': 'Send messages as you',
};

export function isApiScope(scope: string): scope is ApiScope {
  return (API_SCOPES as readonly string[]).includes(scope);
}
