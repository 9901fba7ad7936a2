import 'reflect-metadata';
import { generateKeyPairSync } from 'node:crypto';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import { createApp } from '../app.factory.js';
import { loadConfig } from '../config/config.js';

/**
 * Builds the application exactly as it serves, offline: production configuration, a freshly
 * generated signing key, in-memory SQLite, no network and not listening; `extraEnv` adds to (or
 * overrides) that environment. Runs `fn` with the application and closes it afterwards, whatever
 * `fn` does. Used by the scripts that write what the application serves (`schema:print`,
 * `openapi:write`).
 */
export async function withOfflineApp<T>(
  extraEnv: NodeJS.ProcessEnv,
  fn: (app: NestFastifyApplication) => Promise<T>,
): Promise<T> {
  const key = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({
    type: 'pkcs8',
    format: 'pem',
  });
  const config = loadConfig({
    NODE_ENV: 'production',
    DATABASE_URL: 'sqlite::memory:',
    JWT_PRIVATE_KEY: key as string,
    LOG_LEVEL: 'warn',
    ...extraEnv,
  });
  const app = await createApp(config);
  try {
    return await fn(app);
  } finally {
    await app.close();
  }
}
