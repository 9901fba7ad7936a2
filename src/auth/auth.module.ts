import { Global, Module } from '@nestjs/common';
import { UsersModule } from '../users/users.module.js';
import { AppPassport } from '../identity/app-passport.js';
import { ApiKeysController } from './api-keys/api-keys.controller.js';
import { ApiKeysRepository } from '../identity/api-keys.repository.js';
import { ApiKeysService } from './api-keys/api-keys.service.js';
import { AuthController } from './auth.controller.js';
import { RouteAuthenticator } from '../identity/auth.guard.js';
import { AuthService } from '../identity/auth.service.js';
import { CredentialUsers } from '../identity/credential-users.js';
import { UsersRepository } from '../users/users.repository.js';
import { CredentialsService } from '../identity/credentials.service.js';
import { SessionService } from './session.service.js';
import {
  ApiKeyHeaderStrategy,
  ApiKeyQueryStrategy,
} from '../identity/strategies/api-key.strategy.js';
import { BasicStrategy } from '../identity/strategies/basic.strategy.js';
import { JwtStrategy } from '../identity/strategies/jwt.strategy.js';
import { TokenService } from '../identity/token.service.js';

@Global()
@Module({
  imports: [UsersModule],
  controllers: [AuthController, ApiKeysController],
  providers: [
    TokenService,
    AuthService,
    // the credential door reads users through their repository
    { provide: CredentialUsers, useExisting: UsersRepository },
    SessionService,
    ApiKeysService,
    ApiKeysRepository,
    // this application's own passport instance and the strategies registered on it (app-passport.ts)
    AppPassport,
    CredentialsService,
    BasicStrategy,
    JwtStrategy,
    ApiKeyHeaderStrategy,
    ApiKeyQueryStrategy,
    RouteAuthenticator,
  ],
  exports: [AuthService, TokenService, CredentialsService, RouteAuthenticator],
})
export class AuthModule {}
