import { Injectable } from '@nestjs/common';
import { PassportStrategy } from '@nestjs/passport';
import { ExtractJwt, Strategy } from 'passport-jwt';
import { AppPassport, NOT_GLOBAL } from '../app-passport.js';
import {
  checkClaims,
  JWT_ALGORITHM,
  JWT_AUDIENCE,
  TokenService,
  type AccessClaims,
} from '../token.service.js';

/**
 * `Authorization: Bearer <JWT>` (RFC 6750), first-party access tokens: passport-jwt pinned to
 * RS256 with `iss` and `aud` checked and `exp` required (jsonwebtoken alone accepts a token
 * without `exp`). Its user is the token's claims; the credential door turns them into a caller with
 * the role from the database, and keeps verified tokens in a cache in front of this strategy
 * (docs/performance.md).
 */
@Injectable()
export class JwtStrategy extends PassportStrategy(Strategy, 'jwt') {
  constructor(passport: AppPassport, tokens: TokenService) {
    super({
      jwtFromRequest: ExtractJwt.fromAuthHeaderAsBearerToken(),
      // a KeyObject (jsonwebtoken accepts one): the PEM is not parsed again on every verify
      secretOrKey: tokens.publicKey as unknown as string,
      algorithms: [JWT_ALGORITHM],
      issuer: tokens.issuer,
      audience: JWT_AUDIENCE,
      ignoreExpiration: false,
    });
    passport.use('jwt', this);
  }

  getPassportInstance(): typeof NOT_GLOBAL {
    return NOT_GLOBAL;
  }

  validate(payload: Partial<AccessClaims>): AccessClaims | false {
    return checkClaims(payload) ?? false;
  }
}
