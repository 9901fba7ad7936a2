import { Inject, Injectable } from '@nestjs/common';
import jwt from 'jsonwebtoken';
import { APP_CONFIG, type AppConfig } from '../config/config.js';
import type { Caller } from './caller.js';
import { isRole, lowerRole, Role } from './role.js';
import { TokenService } from './token.service.js';
import { OAuthArtifactsRepository } from './oauth-artifacts.repository.js';

/** The claims of an OAuth access token (RFC 9068) that Atrium relies on. */
export interface OAuthAccessClaims {
  sub: string;
  client_id: string;
  scope: string;
  /** The grant the token was issued under (checked on every request). */
  gid: string;
  exp: number;
  /** When it was issued, in milliseconds (`ims`; older tokens: `iat` in seconds). */
  issuedAtMs: number;
}

const VERIFIED_CACHE_SIZE = 10_000;

/** True when a JWT's header says it is an OAuth access token (`typ: at+jwt`, RFC 9068 section 2.1). */
export function isOAuthAccessToken(token: string): boolean {
  const dot = token.indexOf('.');
  if (dot <= 0) {
    return false;
  }
  try {
    const header = JSON.parse(Buffer.from(token.slice(0, dot), 'base64url').toString('utf8')) as {
      typ?: unknown;
    };
    return typeof header.typ === 'string' && /^(application\/)?at\+jwt$/i.test(header.typ);
  } catch {
    return false;
  }
}

/**
 * Verifies OAuth access tokens issued by /oauth/token: RS256 with the service key, `typ: at+jwt`,
 * issuer `${PUBLIC_URL}/oauth`, audience `${PUBLIC_URL}/api`, `exp` required. The signature check
 * is cached per token string (as for first-party tokens); the grant is NOT: every request looks it
 * up (one primary-key read joined to the user), so a revoked grant, a deleted client or a deleted
 * user stops the token at once on every instance (docs/oauth.md).
 */
@Injectable()
export class OAuthTokenVerifier {
  readonly issuer: string;
  readonly audience: string;
  private readonly verified = new Map<string, OAuthAccessClaims>();

  constructor(
    @Inject(APP_CONFIG) config: AppConfig,
    private readonly tokens: TokenService,
    private readonly artifacts: OAuthArtifactsRepository,
  ) {
    this.issuer = `${config.publicUrl}/oauth`;
    this.audience = `${config.publicUrl}/api`;
  }

  /** The token's claims when its signature, type, issuer, audience and expiry are right. */
  claims(token: string): OAuthAccessClaims | undefined {
    const nowS = Date.now() / 1000;
    const cached = this.verified.get(token);
    if (cached) {
      if (cached.exp > nowS) {
        return cached;
      }
      this.verified.delete(token);
      return undefined;
    }
    let decoded: jwt.Jwt;
    try {
      decoded = jwt.verify(token, this.tokens.publicKey, {
        algorithms: ['RS256'],
        issuer: this.issuer,
        audience: this.audience,
        complete: true,
      });
    } catch {
      return undefined;
    }
    const typ = decoded.header.typ;
    const p = decoded.payload as Partial<OAuthAccessClaims> & { iat?: number; ims?: number };
    if (
      typeof typ !== 'string' ||
      !/^(application\/)?at\+jwt$/i.test(typ) ||
      typeof p.exp !== 'number' ||
      typeof p.sub !== 'string' ||
      typeof p.client_id !== 'string' ||
      typeof p.gid !== 'string' ||
      typeof p.iat !== 'number'
    ) {
      return undefined;
    }
    const claims: OAuthAccessClaims = {
      sub: p.sub,
      client_id: p.client_id,
      scope: typeof p.scope === 'string' ? p.scope : '',
      gid: p.gid,
      exp: p.exp,
      issuedAtMs: typeof p.ims === 'number' ? p.ims : p.iat * 1000,
    };
    if (this.verified.size >= VERIFIED_CACHE_SIZE) {
      this.verified.delete(this.verified.keys().next().value as string);
    }
    this.verified.set(token, claims);
    return claims;
  }

  /** The caller an OAuth access token acts as, or undefined when it is not (or no longer) valid. */
  async verify(token: string): Promise<Caller | undefined> {
    const claims = this.claims(token);
    if (!claims) {
      return undefined;
    }
    const grant = await this.artifacts.liveGrant(claims.gid, claims.sub);
    if (!grant || !isRole(grant.role)) {
      return undefined;
    }
    // a password change, demotion or deletion since it was issued ends it
    if (grant.validAfter !== null && claims.issuedAtMs < Date.parse(grant.validAfter)) {
      return undefined;
    }
    const scopes = claims.scope.split(' ').filter((s) => s !== '');
    // a scope the client no longer has (its registration was narrowed) ends the token
    if (scopes.some((s) => !grant.clientScopes.includes(s))) {
      return undefined;
    }
    return {
      userId: claims.sub,
      role: oauthRole(grant.role, scopes),
      method: 'oauth',
      clientId: claims.client_id,
      scopes,
    };
  }
}

/**
 * The rank an OAuth access token acts at: its user's role, at most USER unless the token carries
 * the `admin` scope (an ADMIN's token without it is a USER's).
 */
function oauthRole(role: Role, scopes: readonly string[]): Role {
  return scopes.includes('admin') ? role : lowerRole(role, Role.USER);
}
