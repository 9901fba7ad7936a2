import { Injectable } from '@nestjs/common';
import { PassportStrategy } from '@nestjs/passport';
import { BasicStrategy as Strategy } from 'passport-http';
import { AuthService } from '../auth.service.js';
import type { Caller } from '../caller.js';

/** `Authorization: Basic base64(email:password)`, verified against the argon2id hash. */
@Injectable()
export class BasicStrategy extends PassportStrategy(Strategy, 'basic') {
  constructor(private readonly auth: AuthService) {
    super({ realm: 'atrium' });
  }

  async validate(email: string, password: string): Promise<Caller | false> {
    return (await this.auth.verifyBasic(email, password)) ?? false;
  }
}
