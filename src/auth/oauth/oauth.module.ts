import { Module } from '@nestjs/common';
import { UsersModule } from '../../users/users.module.js';
import { OAuthArtifactsRepository } from './oauth-artifacts.repository.js';
import { OAuthClientsController } from './oauth-clients.controller.js';
import { OAuthClientsRepository } from './oauth-clients.repository.js';
import { OAuthClientsService } from './oauth-clients.service.js';
import { OAuthGrantsController } from './oauth-grants.controller.js';
import { OAuthGrantsService } from './oauth-grants.service.js';
import { OAuthInteractionsService } from './oauth-interactions.service.js';
import { OAuthTokenVerifier } from './oauth-token.verifier.js';
import { OidcProviderService } from './oidc-provider.service.js';

/** Atrium as an OAuth 2.0 authorization server for partner apps (docs/oauth.md). */
@Module({
  imports: [UsersModule],
  controllers: [OAuthClientsController, OAuthGrantsController],
  providers: [
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
    OAuthTokenVerifier,
  ],
})
export class OAuthModule {}
