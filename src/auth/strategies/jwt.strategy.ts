import { Injectable } from '@nestjs/common';
import { PassportStrategy } from '@nestjs/passport';
import { Strategy as PassportBase } from 'passport';
import { AuthService } from '../auth.service.js';
import type { Caller } from '../caller.js';

type Verify = (token: string, done: (err: unknown, user?: unknown) => void) => void;

const BEARER = /^Bearer[ ]+([A-Za-z0-9\-_=]+\.[A-Za-z0-9\-_=]+\.?[A-Za-z0-9\-_.+/=]*)$/i;

/**
 * `Authorization: Bearer <JWT>` (RFC 6750). Fails (never throws) when the header is absent or not a
 * Bearer JWT, so the next strategy is tried. Verification is TokenService's (jsonwebtoken, RS256
 * pinned, iss/aud checked, exp required) with its verified-token cache; passport-jwt was dropped
 * because it re-verifies every request with no way to reuse a verification (docs/performance.md).
 */
class BearerJwtStrategy extends PassportBase {
  constructor(private readonly verify: Verify) {
    super();
    this.name = 'jwt';
  }

  override authenticate(req: { headers: Record<string, string | string[] | undefined> }): void {
    const header = req.headers.authorization;
    const match = typeof header === 'string' ? BEARER.exec(header) : null;
    if (!match?.[1]) {
      this.fail('Bearer', 401);
      return;
    }
    this.verify(match[1], (err, user) => {
      if (err) {
        this.error(err);
      } else if (!user) {
        this.fail('Bearer error="invalid_token"', 401);
      } else {
        this.success(user);
      }
    });
  }
}

@Injectable()
export class JwtStrategy extends PassportStrategy(BearerJwtStrategy, 'jwt') {
  constructor(private readonly auth: AuthService) {
    super();
  }

  async validate(token: string): Promise<Caller | false> {
    return (await this.auth.verifyBearer(token)) ?? false;
  }
}
