import { Inject, Injectable, Logger, type OnApplicationBootstrap } from '@nestjs/common';
import { APP_CONFIG, type AppConfig } from '../config/config.js';
import { AdminRulesService } from './admin-rules.service.js';

/**
 * ADMIN_EMAIL/ADMIN_PASSWORD at boot, when no live ADMIN exists: the live user with that email is
 * promoted (logged at warn), or that ADMIN is created (docs/contract.md, "The last ADMIN"). Without
 * them and without a live ADMIN, one warning says how to create one: a newcomer's first boot would
 * otherwise leave them with no account that can create users.
 */
const NO_ADMIN_MESSAGE =
  'No ADMIN exists: set ADMIN_EMAIL and ADMIN_PASSWORD and restart to create one (docs/deployment.md)';

@Injectable()
export class AdminBootstrap implements OnApplicationBootstrap {
  private readonly logger = new Logger(AdminBootstrap.name);

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly adminRules: AdminRulesService,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    const { adminEmail, adminPassword } = this.config;
    if (!adminEmail || !adminPassword) {
      if (!(await this.adminRules.liveAdminExists())) {
        this.logger.warn(NO_ADMIN_MESSAGE);
      }
      return;
    }
    const outcome = await this.adminRules.ensureAdmin(adminEmail, adminPassword);
    switch (outcome.kind) {
      case 'created':
        this.logger.log(`Created the first ADMIN (${adminEmail}, ${outcome.userId})`);
        break;
      case 'promoted':
        this.logger.warn(
          `No ADMIN existed: promoted the existing user ${outcome.userId} (ADMIN_EMAIL ${adminEmail}) to ADMIN; ` +
            (outcome.passwordSet
              ? 'it had no password, so ADMIN_PASSWORD is now its password'
              : 'it keeps its own password (ADMIN_PASSWORD was not applied)'),
        );
        break;
      case 'exists':
        break;
    }
  }
}
