import { Injectable } from '@nestjs/common';
import { PassportStrategy } from '@nestjs/passport';
import { AuthService } from '../auth.service.js';
import type { Caller } from '../caller.js';
import { CarrierStrategy, type CarrierRequest } from './carrier.strategy.js';

const BEARER = /^Bearer[ ]+([A-Za-z0-9\-_=]+\.[A-Za-z0-9\-_=]+\.?[A-Za-z0-9\-_.+/=]*)$/i;

function bearerToken(req: CarrierRequest): string | undefined {
  const header = req.headers.authorization;
  return typeof header === 'string' ? BEARER.exec(header)?.[1] : undefined;
}

/**
 * `Authorization: Bearer <JWT>` (RFC 6750). Verification is TokenService's (jsonwebtoken, RS256
 * pinned, iss/aud checked, exp required) with its verified-token cache; passport-jwt was dropped
 * because it re-verifies every request with no way to reuse a verification (docs/performance.md).
 */
@Injectable()
export class JwtStrategy extends PassportStrategy(CarrierStrategy, 'jwt') {
  constructor(private readonly auth: AuthService) {
    super('jwt', bearerToken);
  }

  async validate(token: string): Promise<Caller | false> {
    return (await this.auth.verifyBearer(token)) ?? false;
  }
}
