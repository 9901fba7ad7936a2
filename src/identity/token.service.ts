import {
  createHash,
  createPrivateKey,
  createPublicKey,
  generateKeyPairSync,
  randomBytes,
  type KeyObject,
} from 'node:crypto';
import { existsSync, linkSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Inject, Injectable, Logger } from '@nestjs/common';
import jwt from 'jsonwebtoken';
import { APP_CONFIG, type AppConfig } from '../config/config.js';
import { Role } from './role.js';

export const JWT_ALGORITHM = 'RS256';
export const JWT_AUDIENCE = 'atrium-api';

export interface AccessClaims {
  sub: string;
  role: Role;
  iss: string;
  aud: string;
  exp: number;
  iat: number;
  jti: string;
}

/**
 * Signs first-party access tokens (verified by the passport-jwt strategy); keys are KeyObjects so
 * verification never re-parses PEM.
 */
@Injectable()
export class TokenService {
  private readonly logger = new Logger(TokenService.name);
  readonly privateKey: KeyObject;
  readonly publicKey: KeyObject;
  readonly issuer: string;

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
    mkdirSync(this.config.dataDir, { recursive: true });
    // Replicas sharing DATA_DIR (one volume) may boot together: the key is written to a file of
    // this process's own and linked into place, which only one of them can do; the others read the
    // winner's key, so every replica signs with the same one.
    const temp = `${file}.${process.pid}.${randomBytes(4).toString('hex')}`;
    writeFileSync(temp, generate(), { mode: 0o600 });
    try {
      linkSync(temp, file);
      this.logger.warn(
        `JWT_PRIVATE_KEY is not set: generated a signing key and kept it in ${file}; ` +
          'every replica must share this file (one DATA_DIR volume) or JWT_PRIVATE_KEY',
      );
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') {
        throw err;
      }
    } finally {
      rmSync(temp, { force: true });
    }
    return readFileSync(file, 'utf8');
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

  newOpaqueToken(prefix: string): { token: string; hash: string } {
    const token = `${prefix}${randomBytes(32).toString('base64url')}`;
    return { token, hash: sha256(token) };
  }
}

/** The claims of a verified token when they have what we require (`exp`, `sub`). */
export function checkClaims(claims: Partial<AccessClaims>): AccessClaims | undefined {
  if (typeof claims.exp !== 'number' || typeof claims.sub !== 'string') {
    return undefined;
  }
  return claims as AccessClaims;
}

export function sha256(value: string): string {
  return createHash('sha256').update(value).digest('hex');
}
