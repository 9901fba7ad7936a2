import {
  createHash,
  createPrivateKey,
  createPublicKey,
  generateKeyPairSync,
  randomBytes,
  type KeyObject,
} from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Inject, Injectable, Logger } from '@nestjs/common';
import jwt from 'jsonwebtoken';
import { APP_CONFIG, type AppConfig } from '../config/config.js';
import { Role } from './role.js';

export const JWT_ALGORITHM = 'RS256';
export const JWT_AUDIENCE = 'atrium-api';
const VERIFIED_CACHE_SIZE = 10_000;

export interface AccessClaims {
  sub: string;
  role: Role;
  iss: string;
  aud: string;
  exp: number;
  iat: number;
  jti: string;
}

/** Signs and verifies first-party access tokens; keys are KeyObjects so verify never re-parses PEM. */
@Injectable()
export class TokenService {
  private readonly logger = new Logger(TokenService.name);
  readonly privateKey: KeyObject;
  readonly publicKey: KeyObject;
  readonly issuer: string;
  private readonly verified = new Map<string, AccessClaims>();

  constructor(@Inject(APP_CONFIG) private readonly config: AppConfig) {
    this.privateKey = createPrivateKey(this.loadPem());
    this.publicKey = createPublicKey(this.privateKey);
    this.issuer = config.publicUrl;
  }

  private loadPem(): string {
    if (this.config.jwtPrivateKey) {
      return this.config.jwtPrivateKey;
    }
    const generate = () =>
      generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({
        type: 'pkcs8',
        format: 'pem',
      }) as string;
    const db = this.config.database;
    if (db.type === 'sqlite' && db.path === ':memory:') {
      return generate(); // an in-memory database gets an in-memory key: nothing outlives the process
    }
    const file = join(this.config.dataDir, 'jwt-private.pem');
    if (existsSync(file)) {
      return readFileSync(file, 'utf8');
    }
    this.logger.warn(`JWT_PRIVATE_KEY is not set: generated a signing key and kept it in ${file}`);
    mkdirSync(this.config.dataDir, { recursive: true });
    const pem = generate();
    writeFileSync(file, pem, { mode: 0o600 });
    return pem;
  }

  get accessTtlS(): number {
    return this.config.jwtAccessTtlS;
  }

  get refreshTtlS(): number {
    return this.config.refreshTtlS;
  }

  signAccessToken(userId: string, role: Role): string {
    return jwt.sign({ role }, this.privateKey, {
      algorithm: JWT_ALGORITHM,
      subject: userId,
      issuer: this.issuer,
      audience: JWT_AUDIENCE,
      expiresIn: this.config.jwtAccessTtlS,
      jwtid: randomBytes(12).toString('base64url'),
    });
  }

  /** Verify options shared by the passport strategy and the WebSocket handshake. */
  get verifyOptions(): jwt.VerifyOptions & { algorithms: jwt.Algorithm[] } {
    return { algorithms: [JWT_ALGORITHM], issuer: this.issuer, audience: JWT_AUDIENCE };
  }

  /**
   * The claims of a valid token, or undefined. `exp` is required (jsonwebtoken alone accepts none).
   * A token's signature is verified once and its claims remembered until it expires: an RSA verify
   * plus JWS parsing was ~20% of a GET's CPU (docs/performance.md). The token string itself is the
   * key, so a cached entry can only ever answer for the exact bytes that were verified.
   */
  verifyAccessToken(token: string): AccessClaims | undefined {
    const nowS = Date.now() / 1000;
    const cached = this.verified.get(token);
    if (cached) {
      if (cached.exp > nowS) {
        return cached;
      }
      this.verified.delete(token);
      return undefined;
    }
    let claims: AccessClaims | undefined;
    try {
      claims = checkClaims(
        jwt.verify(token, this.publicKey, this.verifyOptions) as Partial<AccessClaims>,
      );
    } catch {
      return undefined;
    }
    if (claims) {
      if (this.verified.size >= VERIFIED_CACHE_SIZE) {
        // drop the oldest entry (Map keeps insertion order)
        this.verified.delete(this.verified.keys().next().value as string);
      }
      this.verified.set(token, claims);
    }
    return claims;
  }

  newOpaqueToken(prefix: string): { token: string; hash: string } {
    const token = `${prefix}${randomBytes(32).toString('base64url')}`;
    return { token, hash: sha256(token) };
  }
}

export function checkClaims(claims: Partial<AccessClaims>): AccessClaims | undefined {
  if (typeof claims.exp !== 'number' || typeof claims.sub !== 'string') {
    return undefined;
  }
  return claims as AccessClaims;
}

export function sha256(value: string): string {
  return createHash('sha256').update(value).digest('hex');
}
