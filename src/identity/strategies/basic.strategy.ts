import { Injectable } from '@nestjs/common';
import { PassportStrategy } from '@nestjs/passport';
import { BasicStrategy as Strategy } from 'passport-http';
import { AppPassport, NOT_GLOBAL } from '../app-passport.js';
import { AuthService } from '../auth.service.js';
import type { Caller } from '../caller.js';

/** `Authorization: Basic base64(email:password)`, verified against the argon2id hash. */
@Injectable()
export class BasicStrategy extends PassportStrategy(Strategy, 'basic') {
  constructor(
    passport: AppPassport,
    private readonly auth: AuthService,
  ) {
    super({ realm: 'atrium' });
    passport.use('basic', this);
  }

  /** Registered on this application's AppPassport, not on passport's global instance. */
  getPassportInstance(): typeof NOT_GLOBAL {
    return NOT_GLOBAL;
  }

  async validate(email: string, password: string): Promise<Caller | false> {
    return (await this.auth.verifyBasic(email, password)) ?? false;
  }
}
