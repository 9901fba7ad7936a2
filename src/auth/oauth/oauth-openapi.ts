import type { OpenAPIObject } from '@nestjs/swagger';
import { OPENAPI_PUBLIC_MARK } from '../../identity/auth.decorators.js';
import { SCOPE_WORDS } from '../../identity/scopes.js';

const METHODS = ['get', 'put', 'post', 'delete', 'patch', 'head', 'options'] as const;

/**
 * Completes the document's security: the `oauth2` scheme (authorization code flow, every scope in
 * words), and `security: []` on the operations `@Public()` marked. Each protected operation's
 * requirement (its schemes, and its scopes in the `oauth2` entry) comes from its `@Authenticated`.
 */
export function describeOAuthInOpenApi(document: OpenAPIObject, publicUrl: string): void {
  document.components ??= {};
  document.components.securitySchemes ??= {};
  document.components.securitySchemes.oauth2 = {
    type: 'oauth2',
    description:
      'Partner apps acting for a user (docs/oauth.md): authorization code with PKCE S256. A token may do what its user\u2019s role allows and its scopes cover; operations without an `oauth2` requirement are not available to partner apps.',
    flows: {
      authorizationCode: {
        authorizationUrl: `${publicUrl}/oauth/auth`,
        tokenUrl: `${publicUrl}/oauth/token`,
        refreshUrl: `${publicUrl}/oauth/token`,
        scopes: { ...SCOPE_WORDS },
      },
    },
  };
  for (const item of Object.values(document.paths)) {
    for (const method of METHODS) {
      const operation = item[method] as
        | (Record<string, unknown> & { security?: unknown })
        | undefined;
      if (operation?.[OPENAPI_PUBLIC_MARK]) {
        delete operation[OPENAPI_PUBLIC_MARK];
        operation.security = [];
      }
    }
  }
}
