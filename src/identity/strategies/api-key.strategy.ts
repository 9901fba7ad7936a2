import { Injectable } from '@nestjs/common';
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

/** `?api_key=<key>` (the spec's query carrier; logs redact it). */
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
