import { randomBytes } from 'node:crypto';
import { NestFactory } from '@nestjs/core';
import { FastifyAdapter, type NestFastifyApplication } from '@nestjs/platform-fastify';
import { AppModule } from '../../src/app.module.js';
import { loadConfig, type AppConfig } from '../../src/config/config.js';
import { Role } from '../../src/identity/role.js';
import type { Caller } from '../../src/identity/caller.js';
import { UserAccountsService } from '../../src/users/user-accounts.service.js';
import type { User } from '../../src/domain/user.js';
import { UsersService } from '../../src/users/users.service.js';
import { ADMIN_EMAIL, ADMIN_PASSWORD, freshDatabaseUrl, PUBLIC_URL } from './app.js';

export interface ServiceContext {
  ctx: NestFastifyApplication;
  config: AppConfig;
  close(): Promise<void>;
}

/**
 * The application's modules without a transport: the real AppModule (real database, SQLite in memory
 * or a fresh PostgreSQL schema as in startApp; Redis when REDIS_URL is set), no HTTP listener and
 * none of the HTTP layer of src/app.factory.ts. Tests take services from `ctx.get(...)` and call them with a caller of their choice.
 */
export async function startServiceContext(
  env: Record<string, string | undefined> = {},
): Promise<ServiceContext> {
  const config = loadConfig({
    NODE_ENV: 'test',
    PORT: '0',
    PUBLIC_URL,
    DATABASE_URL: env.DATABASE_URL ?? freshDatabaseUrl(),
    REDIS_URL: process.env.REDIS_URL,
    SQLITE_STATEMENT_CACHE: process.env.SQLITE_STATEMENT_CACHE,
    ADMIN_EMAIL,
    ADMIN_PASSWORD,
    LOG_LEVEL: 'silent',
    PASSWORD_HASH_PROFILE: 'test',
    // the engine that posts webhooks has nothing to do here
    WEBHOOK_DELIVERY_ENABLED: 'false',
    ...env,
  });
  // an adapter that never listens: the GraphQL module registers its routes on it when the modules
  // start (init), and nothing else of the HTTP layer (app.factory.ts's hooks, filters, pipes) is set up
  const ctx = await NestFactory.create<NestFastifyApplication>(
    AppModule.forRoot(config),
    new FastifyAdapter(),
    { logger: false, abortOnError: false },
  );
  await ctx.init();
  return { ctx, config, close: () => ctx.close() };
}

/** A caller as the credential door builds it for a password sign-in of `userId` with `role`. */
function callerOf(userId: string, role: Role): Caller {
  return { userId, role, method: 'basic' };
}

/** The administrator the application creates at start (ADMIN_EMAIL), as a caller. */
export async function bootstrapAdmin(s: ServiceContext): Promise<Caller> {
  const users = s.ctx.get(UsersService);
  // a read needs only a role: any ADMIN caller may list the administrators
  const admins = await users.page(callerOf('usr_reader', Role.ADMIN), {
    rest: { role: Role.ADMIN },
  });
  const admin = admins.nodes.find((u) => u.email === ADMIN_EMAIL);
  if (!admin) {
    throw new Error(`no bootstrap administrator ${ADMIN_EMAIL}`);
  }
  return callerOf(admin.id, Role.ADMIN);
}

/** A new user of `role` created by `admin` through the service, and a caller of it. */
export async function newUser(
  s: ServiceContext,
  admin: Caller,
  role: Role,
): Promise<{ user: User; caller: Caller }> {
  const tag = randomBytes(5).toString('hex');
  const user = await s.ctx.get(UserAccountsService).create(admin, {
    name: `${role.toLowerCase()} ${tag}`,
    email: `${role.toLowerCase()}.${tag}@example.com`,
    role,
    password: `pw-${tag}-secret`,
  });
  return { user, caller: callerOf(user.id, role) };
}
