import { Inject, Injectable } from '@nestjs/common';
import { APP_CONFIG, type AppConfig } from '../config/config.js';

/** The configured PUBLIC_URL, base of absolute links. */
@Injectable()
export class PublicUrl {
  readonly base: string;

  constructor(@Inject(APP_CONFIG) config: AppConfig) {
    this.base = config.publicUrl;
  }
}
