import { Injectable } from '@nestjs/common';
import { PassportStrategy } from '@nestjs/passport';
import { Strategy as PassportBase } from 'passport';
import { HeaderAPIKeyStrategy } from 'passport-headerapikey';
import { AuthService } from '../auth.service.js';
import type { Caller } from '../caller.js';

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

type Verify = (key: string, done: (err: unknown, user?: unknown) => void) => void;

/** A passport strategy for `?api_key=<key>`: fails (does not throw) when the parameter is absent. */
class QueryApiKeyStrategy extends PassportBase {
  constructor(private readonly verify: Verify) {
    super();
    this.name = 'api-key-query';
  }

  override authenticate(req: { query?: Record<string, unknown> }): void {
    const key = req.query?.api_key;
    if (typeof key !== 'string' || key === '') {
      this.fail('Missing api_key', 401);
      return;
    }
    this.verify(key, (err, user) => {
      if (err) {
        this.error(err);
      } else if (!user) {
        this.fail('Invalid api_key', 401);
      } else {
        this.success(user);
      }
    });
  }
}

/** `?api_key=<key>` (the spec's query carrier; logs redact it). */
@Injectable()
export class ApiKeyQueryStrategy extends PassportStrategy(QueryApiKeyStrategy, 'api-key-query') {
  constructor(private readonly auth: AuthService) {
    super();
  }

  async validate(key: string): Promise<Caller | false> {
    return (await this.auth.verifyApiKey(key)) ?? false;
  }
}
