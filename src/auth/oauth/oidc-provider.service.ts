import { createHash, createHmac } from 'node:crypto';
import {
  Inject,
  Injectable,
  Logger,
  type OnModuleDestroy,
  type OnModuleInit,
} from '@nestjs/common';
import type Provider from 'oidc-provider';
import type { Configuration, KoaContextWithOIDC } from 'oidc-provider';
import { replaceClientSecretComparison } from '../../common/library-internals.js';
import { APP_CONFIG, type AppConfig } from '../../config/config.js';
import { UsersService } from '../../users/users.service.js';
import { sha256, TokenService } from '../../identity/token.service.js';
import { OAuthArtifactsRepository } from '../../identity/oauth-artifacts.repository.js';
import { OAuthClientsRepository } from './oauth-clients.repository.js';
import { ALL_SCOPES, API_SCOPES } from '../../identity/scopes.js';
import { offlineAccessConfiguration } from './offline-access.js';
import { errorPage } from './oauth-pages.js';
import { databaseAdapter, secretHashes } from './oidc-adapter.js';
import { OIDC_LIBRARY, type OidcLibrary } from './oidc-library.js';

const ACCESS_TOKEN_TTL_S = 600;
const CODE_TTL_S = 60;
const GRANT_TTL_S = 365 * 86_400;
const SESSION_TTL_S = 14 * 86_400;
/** Time to sign in and consent; an anonymous /oauth/auth stores one interaction row this long. */
const INTERACTION_TTL_S = 600;
const PURGE_INTERVAL_MS = 10 * 60_000;
const PROVIDER_CSP = "default-src 'none'; script-src; frame-ancestors 'none'; base-uri 'none'";

/** The members of oidc-provider's Session that say who is signed in. */
interface SignedInSession {
  accountId?: string;
  loginTs?: number;
  amr?: string[];
  acr?: string;
  authorizations?: Record<string, unknown>;
  resetIdentifier(): void;
}

/**
 * A browser's `/oauth` session whose account no longer exists (the user was deleted) is signed
 * out: without an account, oidc-provider would go on to the consent checks and fail there (a 500).
 * The session gets a new identifier and no account, so the sign-in page is shown again.
 */
function signOutDeletedAccount(ctx: KoaContextWithOIDC | undefined, accountId: string): void {
  const session = (ctx?.oidc as { entities?: { Session?: SignedInSession } } | undefined)?.entities
    ?.Session;
  if (session?.accountId !== accountId) {
    return;
  }
  session.accountId = undefined;
  session.loginTs = undefined;
  session.amr = undefined;
  session.acr = undefined;
  session.authorizations = {};
  session.resetIdentifier();
}

/** The claim carrying the grant id in our access tokens (checked per request, docs/oauth.md). */
const GRANT_CLAIM = 'gid';

/**
 * Atrium's OAuth 2.0 authorization server: oidc-provider configured to the contract (code + PKCE
 * S256 for every client, exact redirect URIs, no implicit/password/dynamic registration/request_uri,
 * RFC 9068 JWT access tokens for `${PUBLIC_URL}/api` signed with the service's RSA key).
 */
@Injectable()
export class OidcProviderService implements OnModuleInit, OnModuleDestroy {
  private readonly logger = new Logger('OAuth');
  readonly provider: Provider;
  readonly issuer: string;
  readonly apiAudience: string;
  /** Secret for the sign-in/consent forms' CSRF tokens (derived from the signing key). */
  readonly formKey: Buffer;
  private purgeTimer?: NodeJS.Timeout;

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly tokens: TokenService,
    private readonly artifacts: OAuthArtifactsRepository,
    private readonly clients: OAuthClientsRepository,
    private readonly users: UsersService,
    @Inject(OIDC_LIBRARY) readonly lib: OidcLibrary,
  ) {
    this.issuer = `${config.publicUrl}/oauth`;
    this.apiAudience = `${config.publicUrl}/api`;
    const der = tokens.privateKey.export({ type: 'pkcs8', format: 'der' });
    this.formKey = createHmac('sha256', der).update('atrium oauth forms').digest();
    // built here, not in onModuleInit: the routes are mounted before the application initialises
    this.provider = new lib.Provider(this.issuer, this.configuration());
    // behind TRUSTED_PROXIES only: the Fastify mount rewrites X-Forwarded-* from Fastify's own
    // trust decision, so Koa may always read them (see oauth.routes.ts)
    this.provider.proxy = true;
    // secrets are stored as SHA-256: hash what the client presents and compare in constant time
    // (during a rotation's overlap the previous secret's hash too, until it expires)
    const compare = (stored: string | undefined, presented: string): boolean => {
      const presentedHash = sha256(presented);
      return secretHashes(stored).some((hash) => hash === presentedHash);
    };
    replaceClientSecretComparison(this.provider, compare);
    // what oidc-provider renders itself is never framed either: the form_post response page (an
    // auto-submitting form carrying the code) gets a CSP whose empty script-src the library extends
    // with the hash of that page's one inline script; the other pages set their own (oauth-pages.ts)
    this.provider.use(async (ctx, next) => {
      ctx.set('Content-Security-Policy', PROVIDER_CSP);
      ctx.set('X-Frame-Options', 'DENY');
      await next();
    });
    this.provider.on('server_error', (_ctx: unknown, err: Error) =>
      this.logger.error({ err }, 'oidc-provider server error'),
    );
  }

  onModuleInit(): void {
    this.purgeTimer = setInterval(() => {
      this.artifacts
        .purgeExpired()
        .catch((err: unknown) => this.logger.warn({ err }, 'could not purge expired artefacts'));
    }, PURGE_INTERVAL_MS);
    this.purgeTimer.unref();
  }

  onModuleDestroy(): void {
    clearInterval(this.purgeTimer);
  }

  private signingJwk(): Record<string, unknown> {
    const jwk = this.tokens.privateKey.export({ format: 'jwk' }) as Record<string, unknown>;
    const kid = createHash('sha256').update(String(jwk.n)).digest('base64url').slice(0, 16);
    return { ...jwk, kid, alg: 'RS256', use: 'sig' };
  }

  private configuration(): Configuration {
    const apiAudience = this.apiAudience;
    const cookieKey = createHmac('sha256', this.formKey).update('cookies').digest('base64url');
    const users = this.users;
    const artifacts = this.artifacts;
    return {
      ...offlineAccessConfiguration,
      adapter: databaseAdapter(this.artifacts, this.clients, this.lib.errors),
      jwks: { keys: [this.signingJwk()] },
      cookies: {
        keys: [cookieKey],
        long: { httpOnly: true, sameSite: 'lax', signed: true },
        short: { httpOnly: true, sameSite: 'lax', signed: true },
      },
      scopes: [...ALL_SCOPES],
      claims: {
        openid: ['sub'],
        profile: ['name', 'updated_at'],
        email: ['email', 'email_verified'],
      },
      responseTypes: ['code'],
      pkce: { required: () => true },
      allowOmittingSingleRegisteredRedirectUri: false,
      clientAuthMethods: ['client_secret_basic', 'none'],
      clientDefaults: {
        grant_types: ['authorization_code'],
        response_types: ['code'],
        id_token_signed_response_alg: 'RS256',
        token_endpoint_auth_method: 'client_secret_basic',
      },
      enabledJWA: {
        idTokenSigningAlgValues: ['RS256'],
        userinfoSigningAlgValues: ['RS256'],
        requestObjectSigningAlgValues: ['RS256'],
        clientAuthSigningAlgValues: ['RS256'],
        authorizationSigningAlgValues: ['RS256'],
        introspectionSigningAlgValues: ['RS256'],
      },
      features: {
        devInteractions: { enabled: false },
        dPoP: { enabled: false },
        pushedAuthorizationRequests: { enabled: false },
        requestObjects: { enabled: false },
        registration: { enabled: false },
        rpInitiatedLogout: { enabled: false },
        introspection: { enabled: false },
        revocation: { enabled: true },
        userinfo: { enabled: true },
        claimsParameter: { enabled: false },
        resourceIndicators: {
          enabled: true,
          defaultResource: () => apiAudience,
          useGrantedResource: () => true,
          getResourceServerInfo: (_ctx, resource) => {
            if (resource !== apiAudience) {
              throw new this.lib.errors.InvalidTarget();
            }
            return {
              // `email` too: a token shows the account's email only when it carries it
              scope: [...API_SCOPES, 'email'].join(' '),
              audience: apiAudience,
              accessTokenTTL: ACCESS_TOKEN_TTL_S,
              accessTokenFormat: 'jwt',
              jwt: { sign: { alg: 'RS256' } },
            };
          },
        },
      },
      ttl: {
        AccessToken: ACCESS_TOKEN_TTL_S,
        AuthorizationCode: CODE_TTL_S,
        IdToken: ACCESS_TOKEN_TTL_S,
        Interaction: INTERACTION_TTL_S,
        Session: SESSION_TTL_S,
        Grant: GRANT_TTL_S,
        RefreshToken: this.config.refreshTtlS,
      },
      // every use rotates; a second use of a rotated token is refused and revokes the grant
      rotateRefreshToken: true,
      extraTokenClaims: (_ctx, token) => {
        const grantId = (token as { grantId?: string }).grantId;
        // `ims`: the issue time in milliseconds, against users.oauth_valid_after (a token issued in
        // the same second as a password change is told apart)
        return grantId ? { [GRANT_CLAIM]: grantId, ims: Date.now() } : undefined;
      },
      interactions: {
        url: (_ctx, interaction) => `/oauth/interaction/${interaction.uid}`,
      },
      // consent given once for a client is remembered across browser sessions (per user)
      loadExistingGrant: async (ctx: KoaContextWithOIDC) => {
        const clientId = ctx.oidc.client!.clientId;
        const session = ctx.oidc.session!;
        const fromResult = (ctx.oidc.result as { consent?: { grantId?: string } } | undefined)
          ?.consent?.grantId;
        const grantId =
          fromResult ??
          session.grantIdFor(clientId) ??
          (session.accountId
            ? (await artifacts.grantsOf(session.accountId, clientId))[0]?.id
            : undefined);
        return grantId ? ctx.oidc.provider.Grant.find(grantId) : undefined;
      },
      findAccount: async (ctx, sub) => {
        const user = await users.findById(sub);
        if (!user) {
          signOutDeletedAccount(ctx, sub);
          return undefined;
        }
        return {
          accountId: user.id,
          claims: () => ({
            sub: user.id,
            name: user.name,
            updated_at: Math.floor(Date.parse(user.updatedAt) / 1000),
            email: user.email ?? undefined,
            email_verified: false,
          }),
        };
      },
      renderError: (ctx, out) => {
        ctx.type = 'html';
        const page = errorPage(out.error, out.error_description);
        for (const [name, value] of Object.entries(page.headers)) {
          ctx.set(name, value);
        }
        ctx.body = page.html;
      },
      discovery: {
        claim_types_supported: ['normal'],
        claims_locales_supported: undefined,
        display_values_supported: undefined,
        op_policy_uri: undefined,
        op_tos_uri: undefined,
        service_documentation: `${this.config.publicUrl}/api/docs`,
        ui_locales_supported: undefined,
      },
    };
  }
}
