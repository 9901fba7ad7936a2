import { Injectable } from '@nestjs/common';
import type { RestDeprecation } from '../../common/deprecation-headers.js';
import { PassportStrategy } from '@nestjs/passport';
import { HeaderAPIKeyStrategy } from 'passport-headerapikey';
import { AppPassport, NOT_GLOBAL, type CarrierRequest } from '../app-passport.js';
import { AuthService } from '../auth.service.js';
import type { Caller } from '../caller.js';
import { CarrierStrategy } from './carrier.strategy.js';

/** `X-API-Key: <key>` (also the `apiKey` of a WebSocket `connection_init`). */
@Injectable()
export class ApiKeyHeaderStrategy extends PassportStrategy(HeaderAPIKeyStrategy, 'api-key') {
  constructor(
    passport: AppPassport,
    private readonly auth: AuthService,
  ) {
    super({ header: 'X-API-Key', prefix: '' }, false);
    passport.use('api-key', this);
  }

  getPassportInstance(): typeof NOT_GLOBAL {
    return NOT_GLOBAL;
  }

  async validate(key: string): Promise<Caller | false> {
    return (await this.auth.verifyApiKey(key)) ?? false;
  }
}

/**
 * `?api_key=` is deprecated (docs/changes.md): a credential in a URL ends up in proxy, server and
 * browser logs and histories. It keeps working until the sunset; every REST answer to a request
 * that carries it says so (`Deprecation`, `Sunset`, `Link rel="deprecation"`). `X-API-Key` replaces it.
 */
export const API_KEY_QUERY_DEPRECATION: RestDeprecation = {
  since: new Date('2026-11-28T00:00:00Z'),
  sunset: new Date('2027-06-01T00:00:00Z'),
  link: '/api/docs#/deprecations',
};

/** `?api_key=<key>` (the spec's query carrier, deprecated; logs redact it). */
@Injectable()
export class ApiKeyQueryStrategy extends PassportStrategy(CarrierStrategy, 'api-key-query') {
  constructor(
    passport: AppPassport,
    private readonly auth: AuthService,
  ) {
    super('api-key-query', (req: CarrierRequest) => {
      const key = (req.query as Record<string, unknown> | undefined)?.api_key;
      return typeof key === 'string' && key !== '' ? key : undefined;
    });
    passport.use('api-key-query', this);
  }

  getPassportInstance(): typeof NOT_GLOBAL {
    return NOT_GLOBAL;
  }

  async validate(key: string): Promise<Caller | false> {
    return (await this.auth.verifyApiKey(key)) ?? false;
  }
}
