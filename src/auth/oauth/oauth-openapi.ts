import type { OpenAPIObject } from '@nestjs/swagger';
import { SCOPE_WORDS } from './oauth.scopes.js';
import { restRequirement } from './oauth-scope.policy.js';

const METHODS = ['get', 'put', 'post', 'delete', 'patch', 'head', 'options'] as const;

/**
 * Makes the OAuth rules visible in the OpenAPI document, from the same scope policy the guard
 * enforces: an `oauth2` security scheme (authorization code flow, every scope in words), and on
 * each operation `x-oauth-scopes` (the scopes an OAuth access token needs; absent = not available
 * to OAuth tokens), plus `oauth2` among the operation's security requirements when it lists any.
 */
export function describeOAuthInOpenApi(document: OpenAPIObject, publicUrl: string): void {
  document.components ??= {};
  document.components.securitySchemes ??= {};
  document.components.securitySchemes.oauth2 = {
    type: 'oauth2',
    description:
      'Partner apps acting for a user (docs/oauth.md): authorization code with PKCE S256. A token may do what its user\u2019s role allows and its scopes cover.',
    flows: {
      authorizationCode: {
        authorizationUrl: `${publicUrl}/oauth/auth`,
        tokenUrl: `${publicUrl}/oauth/token`,
        refreshUrl: `${publicUrl}/oauth/token`,
        scopes: { ...SCOPE_WORDS },
      },
    },
  };
  for (const [path, item] of Object.entries(document.paths)) {
    for (const method of METHODS) {
      const operation = item[method];
      if (!operation) {
        continue;
      }
      const requirement = restRequirement(method.toUpperCase(), path);
      const extensible = operation as typeof operation & Record<string, unknown>;
      if (requirement.unavailable) {
        extensible['x-oauth-available'] = false;
        continue;
      }
      extensible['x-oauth-scopes'] = requirement.scopes;
      if (Array.isArray(operation.security) && operation.security.length > 0) {
        operation.security = [...operation.security, { oauth2: requirement.scopes }];
      }
    }
  }
}
