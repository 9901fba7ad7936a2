import { Global, Module } from '@nestjs/common';
import { UsersModule } from '../users/users.module.js';
import { AppPassport } from '../identity/app-passport.js';
import { ApiKeysController } from './api-keys/api-keys.controller.js';
import { ApiKeysRepository } from './api-keys/api-keys.repository.js';
import { ApiKeysService } from './api-keys/api-keys.service.js';
import { AuthController } from './auth.controller.js';
import { RouteAuthenticator } from '../identity/auth.guard.js';
import { AuthService } from '../identity/auth.service.js';
import { CredentialsService } from '../identity/credentials.service.js';
import { SessionService } from './session.service.js';
import { ApiKeyHeaderStrategy, ApiKeyQueryStrategy } from '../identity/strategies/api-key.strategy.js';
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
