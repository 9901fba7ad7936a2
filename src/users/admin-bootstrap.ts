import { Inject, Injectable, Logger, type OnApplicationBootstrap } from '@nestjs/common';
import { APP_CONFIG, type AppConfig } from '../config/config.js';
import { UsersService } from './users.service.js';

/** ADMIN_EMAIL/ADMIN_PASSWORD create the first ADMIN at boot when none exists. */
@Injectable()
export class AdminBootstrap implements OnApplicationBootstrap {
  private readonly logger = new Logger(AdminBootstrap.name);

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly users: UsersService,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    const { adminEmail, adminPassword } = this.config;
    if (adminEmail && adminPassword && (await this.users.ensureAdmin(adminEmail, adminPassword))) {
      this.logger.log(`Created the first ADMIN (${adminEmail})`);
    }
  }
}
