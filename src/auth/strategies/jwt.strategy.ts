import { Injectable } from '@nestjs/common';
import { PassportStrategy } from '@nestjs/passport';
import { ExtractJwt, Strategy } from 'passport-jwt';
import { AuthService } from '../auth.service.js';
import type { Caller } from '../caller.js';
import { checkClaims, JWT_ALGORITHM, JWT_AUDIENCE, TokenService, type AccessClaims } from '../token.service.js';

/** `Authorization: Bearer <JWT>`: RS256 pinned, iss/aud checked, exp required. */
@Injectable()
export class JwtStrategy extends PassportStrategy(Strategy, 'jwt') {
  constructor(
    private readonly auth: AuthService,
    tokens: TokenService,
  ) {
    super({
      jwtFromRequest: ExtractJwt.fromAuthHeaderAsBearerToken(),
      // a KeyObject: jsonwebtoken would re-parse a PEM string on every verify (STACK-NOTES.md)
      secretOrKey: tokens.publicKey as unknown as string,
      algorithms: [JWT_ALGORITHM],
      issuer: tokens.issuer,
      audience: JWT_AUDIENCE,
      jsonWebTokenOptions: { maxAge: `${tokens.accessTtlS + 60}s` },
    });
  }

  async validate(payload: Partial<AccessClaims>): Promise<Caller | false> {
    const claims = checkClaims(payload);
    return (claims && (await this.auth.callerFromClaims(claims.sub))) ?? false;
  }
}
