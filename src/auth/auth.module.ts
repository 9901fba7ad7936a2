import { Global, Module } from '@nestjs/common';
import { APP_GUARD } from '@nestjs/core';
import { PassportModule } from '@nestjs/passport';
import { UsersModule } from '../users/users.module.js';
import { ApiKeysController } from './api-keys/api-keys.controller.js';
import { ApiKeysService } from './api-keys/api-keys.service.js';
import { AuthController } from './auth.controller.js';
import { AuthGuard } from './auth.guard.js';
import { AuthService } from './auth.service.js';
import { SessionService } from './session.service.js';
import { ApiKeyHeaderStrategy, ApiKeyQueryStrategy } from './strategies/api-key.strategy.js';
import { BasicStrategy } from './strategies/basic.strategy.js';
import { JwtStrategy } from './strategies/jwt.strategy.js';
import { TokenService } from './token.service.js';

@Global()
@Module({
  imports: [PassportModule.register({ session: false }), UsersModule],
  controllers: [AuthController, ApiKeysController],
  providers: [
    TokenService,
    AuthService,
    SessionService,
    ApiKeysService,
    BasicStrategy,
    JwtStrategy,
    ApiKeyHeaderStrategy,
    ApiKeyQueryStrategy,
    { provide: APP_GUARD, useClass: AuthGuard },
  ],
  exports: [AuthService, TokenService],
})
export class AuthModule {}
