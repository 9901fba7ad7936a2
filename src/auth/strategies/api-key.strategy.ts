import { Injectable } from '@nestjs/common';
import { PassportStrategy } from '@nestjs/passport';
import { HeaderAPIKeyStrategy } from 'passport-headerapikey';
import { AuthService } from '../auth.service.js';
import type { Caller } from '../caller.js';
import { CarrierStrategy, type CarrierRequest } from './carrier.strategy.js';

/** `X-API-Key: <key>`. */
@Injectable()
export class ApiKeyHeaderStrategy extends PassportStrategy(HeaderAPIKeyStrategy, 'api-key') {
  constructor(private readonly auth: AuthService) {
    super({ header: 'X-API-Key', prefix: '' }, false);
  }

  async validate(key: string): Promise<Caller | false> {
    return (await this.auth.verifyApiKey(key)) ?? false;
  }
}

/** `?api_key=<key>` (the spec's query carrier; logs redact it). */
@Injectable()
export class ApiKeyQueryStrategy extends PassportStrategy(CarrierStrategy, 'api-key-query') {
  constructor(private readonly auth: AuthService) {
    super('api-key-query', (req: CarrierRequest) => {
      const key = (req.query as Record<string, unknown> | undefined)?.api_key;
      return typeof key === 'string' && key !== '' ? key : undefined;
    });
  }

  async validate(key: string): Promise<Caller | false> {
    return (await this.auth.verifyApiKey(key)) ?? false;
  }
}
