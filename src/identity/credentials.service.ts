import { Injectable, Logger, Optional } from '@nestjs/common';
import { AppPassport, type CarrierRequest } from './app-passport.js';
import { AuthService } from './auth.service.js';
import type { Caller } from './caller.js';
import {
  CredentialAttempts,
  NoCredentialAttempts,
  type CredentialThrottle,
} from './credential-attempts.js';
import type { AccessClaims } from './token.service.js';

/**
 * Where credentials came from, whatever the transport: REST and GraphQL over HTTP read the
 * headers (and `?api_key=`), a WebSocket its `connection_init` payload.
 */
export interface CredentialCarrier {
  /** `Authorization` (Bearer or Basic). When present it decides: the other carriers are not read. */
  authorization?: string;
  /** `X-API-Key`, or the `apiKey` of a `connection_init` payload. */
  apiKey?: string;
  /** `?api_key=` (only where the transport accepts it). */
  queryApiKey?: string;
  /** The client address (TRUSTED_PROXIES honoured), for the failed-credential accounting. */
  address: string | undefined;
  /** The request's id, for the security log lines (a WebSocket has none). */
  requestId?: string;
}

/** The kind of credential refused, for the security log. */
type RefusedScheme = CredentialScheme | 'refresh-token';

/** Where a credential came from: the client address and the request id (a carrier is one). */
type ClientRef = Pick<CredentialCarrier, 'address' | 'requestId'>;

/** A security line's fields: what was refused, for which account, from where. Never the credential. */
function securityFields(scheme: RefusedScheme, from: ClientRef, account?: string) {
  return {
    scheme,
    account: account?.slice(0, 254),
    address: from.address,
    request_id: from.requestId,
  };
}

export type CredentialScheme = 'bearer' | 'basic' | 'api-key' | 'api-key-query';

/**
 * One way to verify one kind of credential. The door tries the verifiers of the presented scheme in
 * the order they were added; the first caller wins; none = invalid credentials. An extension (e.g.
 * OAuth access tokens) adds its own with `CredentialsService.addVerifier` and carries its facts on
 * the caller (`method`, `clientId`, `scopes`, `expiresAt`).
 */
export interface CredentialVerifier {
  readonly name: string;
  readonly scheme: CredentialScheme;
  /** The caller for this credential (the raw token, key, or base64 `email:password`), or undefined. */
  verify(credential: string): Promise<Caller | undefined>;
  /**
   * The same caller with its current rights, for a long-lived connection (every WebSocket
   * operation): undefined once the credential has lapsed. Default: `verify(credential)` again.
   */
  recheck?(caller: Caller, credential: string): Promise<Caller | undefined>;
}

/** What the door answers. */
export type DoorAnswer =
  | { kind: 'anonymous' }
  | { kind: 'caller'; caller: Caller; session: CredentialSession }
  | { kind: 'invalid' }
  | { kind: 'throttled'; throttle: CredentialThrottle };

/** How to re-establish a caller later (WebSocket operations): see `CredentialsService.recheck`. */
export interface CredentialSession {
  readonly verifier: CredentialVerifier;
  readonly credential: string;
}

const BEARER = /^Bearer +(\S+)$/i;
const BASIC = /^Basic +(\S+)$/i;
/** Verified first-party tokens kept (their claims), oldest dropped first. */
const VERIFIED_CACHE_SIZE = 10_000;

/** `email` and `password` of a Basic credential (base64 `email:password`), if well-formed. */
function decodeBasic(credential: string): { email: string; password: string } | undefined {
  const decoded = Buffer.from(credential, 'base64').toString('utf8');
  const sep = decoded.indexOf(':');
  return sep > 0 ? { email: decoded.slice(0, sep), password: decoded.slice(sep + 1) } : undefined;
}

/**
 * The credential door: the one place that turns a carrier into a caller, for REST (auth.guard.ts),
 * GraphQL over HTTP (graphql/context.factory.ts) and GraphQL over WebSocket (graphql-ws.server.ts).
 * It owns the order (Authorization: Bearer, then Basic; else X-API-Key; else `?api_key=`), the
 * verification (passport strategies on this application's own passport instance, see
 * app-passport.ts) and the failed-credential accounting (CredentialAttempts):
 * - valid credentials are never refused by a credential bucket;
 * - a password is not checked (429) when its account's bucket, or its address's hard limit, is used
 *   up; a wrong one counts against the address and the account;
 * - a wrong token or key counts against the address; past its budget the answer is 429, not 401.
 */
@Injectable()
export class CredentialsService {
  private readonly security = new Logger('Security');
  private readonly verifiers: CredentialVerifier[] = [];
  private readonly verified = new Map<string, AccessClaims>();
  private readonly attempts: CredentialAttempts;

  constructor(
    private readonly passport: AppPassport,
    private readonly auth: AuthService,
    @Optional() attempts?: CredentialAttempts,
  ) {
    this.attempts = attempts ?? new NoCredentialAttempts();
    this.addVerifier({
      name: 'jwt',
      scheme: 'bearer',
      verify: (token) => this.verifyFirstPartyToken(token),
    });
    this.addVerifier({
      name: 'basic',
      scheme: 'basic',
      verify: (credential) =>
        this.passport.run<Caller>(
          'basic',
          carrierRequest({ authorization: `Basic ${credential}` }),
        ),
      recheck: (caller) => this.auth.recheckBasic(caller),
    });
    this.addVerifier({
      name: 'api-key',
      scheme: 'api-key',
      verify: (key) => this.passport.run<Caller>('api-key', carrierRequest({ apiKey: key })),
    });
    this.addVerifier({
      name: 'api-key-query',
      scheme: 'api-key-query',
      verify: (key) =>
        this.passport.run<Caller>('api-key-query', carrierRequest({ queryApiKey: key })),
    });
  }

  /** Adds a verifier after the existing ones of its scheme (see `CredentialVerifier`). */
  addVerifier(verifier: CredentialVerifier): void {
    this.verifiers.push(verifier);
  }

  /**
   * The caller of a carrier, anonymous (nothing presented), invalid, or throttled. The caller of an
   * HTTP request (a carrier with a request id) carries that request (every verifier builds a fresh
   * caller per check).
   */
  async authenticate(carrier: CredentialCarrier): Promise<DoorAnswer> {
    const answer = await this.answer(carrier);
    if (answer.kind === 'caller' && carrier.requestId !== undefined) {
      answer.caller.request = { requestId: carrier.requestId, ip: carrier.address };
    }
    return answer;
  }

  private answer(carrier: CredentialCarrier): Promise<DoorAnswer> {
    const { authorization } = carrier;
    if (authorization !== undefined && authorization !== '') {
      const bearer = BEARER.exec(authorization)?.[1];
      if (bearer !== undefined) {
        return this.check(bearer, 'bearer', carrier);
      }
      const basic = BASIC.exec(authorization)?.[1];
      if (basic !== undefined) {
        return this.checkBasic(basic, carrier);
      }
      // an unknown scheme or a malformed header
      return this.refuse('bearer', carrier);
    }
    if (carrier.apiKey) {
      return this.check(carrier.apiKey, 'api-key', carrier);
    }
    if (carrier.queryApiKey) {
      return this.check(carrier.queryApiKey, 'api-key-query', carrier);
    }
    return Promise.resolve({ kind: 'anonymous' });
  }

  /** An email and password (POST /auth/token, the sign-in form): the same rules as Basic. */
  checkPassword(
    email: string,
    password: string,
    address: string | undefined,
    requestId?: string,
  ): Promise<DoorAnswer> {
    return this.checkBasic(Buffer.from(`${email}:${password}`).toString('base64'), {
      address,
      requestId,
    });
  }

  /**
   * The caller of an established session with its current rights (role, deletion, key revocation
   * and expiry, token expiry, password change): the same look-ups a request makes. Undefined once
   * the credential has lapsed. Not counted against any bucket: it was valid once.
   */
  async recheck(caller: Caller, session: CredentialSession): Promise<Caller | undefined> {
    if (caller.expiresAt !== undefined && caller.expiresAt <= Date.now()) {
      return undefined;
    }
    const { verifier, credential } = session;
    const current = verifier.recheck
      ? await verifier.recheck(caller, credential)
      : await verifier.verify(credential);
    return current?.userId === caller.userId ? current : undefined;
  }

  private async checkBasic(credential: string, from: ClientRef): Promise<DoorAnswer> {
    const parsed = decodeBasic(credential);
    if (!parsed) {
      return this.refuse('basic', from);
    }
    const account = parsed.email.trim().toLowerCase();
    const throttle = await this.attempts.beforePassword(account, from.address);
    if (throttle) {
      this.throttled('basic', from, throttle, account);
      return { kind: 'throttled', throttle };
    }
    return this.check(credential, 'basic', from, account);
  }

  private async check(
    credential: string,
    scheme: CredentialScheme,
    from: ClientRef,
    account?: string,
  ): Promise<DoorAnswer> {
    for (const verifier of this.verifiers) {
      if (verifier.scheme !== scheme) {
        continue;
      }
      const caller = await verifier.verify(credential);
      if (caller) {
        return { kind: 'caller', caller, session: { verifier, credential } };
      }
    }
    return this.refuse(scheme, from, account);
  }

  /**
   * A credential checked elsewhere was wrong (a refresh token): counted against the address like
   * any failed check; 'throttled' once the address is past its budget, else 'invalid'.
   */
  failed(
    address: string | undefined,
    scheme: RefusedScheme = 'refresh-token',
    requestId?: string,
  ): Promise<DoorAnswer> {
    return this.refuse(scheme, { address, requestId });
  }

  /**
   * A failed check: counted, and logged. A wrong password is a failed login (warn); a wrong token or
   * key is logged at info (an expired token is routine); a refusal by a bucket is warn.
   */
  private async refuse(
    scheme: RefusedScheme,
    from: ClientRef,
    account?: string,
  ): Promise<DoorAnswer> {
    const throttle = await this.attempts.failed(from.address, account);
    if (throttle) {
      this.throttled(scheme, from, throttle, account);
      return { kind: 'throttled', throttle };
    }
    const fields = securityFields(scheme, from, account);
    if (account !== undefined) {
      this.security.warn({ event: 'login_failed', ...fields }, 'wrong email or password');
    } else {
      this.security.log({ event: 'credential_invalid', ...fields }, 'invalid credentials');
    }
    return { kind: 'invalid' };
  }

  /** A credential bucket refused: a lock-out of the account, or too many failures from the address. */
  private throttled(
    scheme: RefusedScheme,
    from: ClientRef,
    throttle: CredentialThrottle,
    account?: string,
  ): void {
    this.security.warn(
      {
        event: 'credential_throttled',
        bucket: throttle.bucket,
        ...securityFields(scheme, from, account),
      },
      throttle.bucket === 'account'
        ? 'account locked out: too many failed passwords'
        : 'too many failed credential checks from this address',
    );
  }

  /**
   * A first-party access token: passport-jwt verifies it once (RS256, iss, aud, exp); its claims are
   * then remembered until it expires, keyed by the exact token string (an RSA verify per request
   * costs more than the rest of the check, docs/performance.md). The role always comes from the
   * database.
   */
  private async verifyFirstPartyToken(token: string): Promise<Caller | undefined> {
    let claims = this.verified.get(token);
    if (claims && claims.exp * 1000 <= Date.now()) {
      this.verified.delete(token);
      return undefined;
    }
    if (!claims) {
      claims = await this.passport.run<AccessClaims>(
        'jwt',
        carrierRequest({ authorization: `Bearer ${token}` }),
      );
      if (!claims) {
        return undefined;
      }
      if (this.verified.size >= VERIFIED_CACHE_SIZE) {
        this.verified.delete(this.verified.keys().next().value as string);
      }
      this.verified.set(token, claims);
    }
    return this.auth.callerFromClaims(claims.sub, claims.iat, claims.exp);
  }
}

function carrierRequest(c: {
  authorization?: string;
  apiKey?: string;
  queryApiKey?: string;
}): CarrierRequest {
  return {
    headers: { authorization: c.authorization, 'x-api-key': c.apiKey },
    query: { api_key: c.queryApiKey },
  };
}
