import { Module, type OnModuleInit } from '@nestjs/common';
import { UsersModule } from '../../users/users.module.js';
import { CredentialsService } from '../../identity/credentials.service.js';
import { OAuthArtifactsRepository } from '../../identity/oauth-artifacts.repository.js';
import { OAuthClientsController } from './oauth-clients.controller.js';
import { OAuthClientsRepository } from './oauth-clients.repository.js';
import { OAuthClientsService } from './oauth-clients.service.js';
import { OAuthGrantsController } from './oauth-grants.controller.js';
import { OAuthGrantsService } from './oauth-grants.service.js';
import { OAuthInteractionsService } from './oauth-interactions.service.js';
import { isOAuthAccessToken, OAuthTokenVerifier } from '../../identity/oauth-token.verifier.js';
import { loadOidcLibrary, OIDC_LIBRARY } from './oidc-library.js';
import { OidcProviderService } from './oidc-provider.service.js';

/** Atrium as an OAuth 2.0 authorization server for partner apps (docs/oauth.md). */
@Module({
  imports: [UsersModule],
  controllers: [OAuthClientsController, OAuthGrantsController],
  providers: [
    { provide: OIDC_LIBRARY, useFactory: loadOidcLibrary },
    OAuthArtifactsRepository,
    OAuthClientsRepository,
    OAuthClientsService,
    OAuthGrantsService,
    OidcProviderService,
    OAuthInteractionsService,
    OAuthTokenVerifier,
  ],
  exports: [
    OidcProviderService,
    OAuthInteractionsService,
    OAuthArtifactsRepository,
    OAuthClientsRepository,
    OAuthTokenVerifier,
  ],
})
export class OAuthModule implements OnModuleInit {
  constructor(
    private readonly credentials: CredentialsService,
    private readonly verifier: OAuthTokenVerifier,
  ) {}

  /**
   * OAuth access tokens become one more kind of Bearer credential at the credential door (REST,
   * GraphQL, WebSocket). A WebSocket re-verifies it for every operation and event (the grant and the
   * user are looked up again), so a revoked grant stops an open subscription too.
   */
  onModuleInit(): void {
    this.credentials.addVerifier({
      name: 'oauth',
      scheme: 'bearer',
      verify: (token) =>
        isOAuthAccessToken(token) ? this.verifier.verify(token) : Promise.resolve(undefined),
    });
  }
}
