import { Global, Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import pg from 'pg';
import { APP_CONFIG, type AppConfig } from '../config/config.js';
import { dataSourceOptions } from './database.options.js';
import { CountersRepository } from './counters.repository.js';
import { DatabaseService } from './database.service.js';
import { RefreshTokensRepository } from './refresh-tokens.repository.js';

async function ensureSchema(config: AppConfig): Promise<void> {
  if (config.database.type !== 'postgres' || !config.database.schema) {
    return;
  }
  const client = new pg.Client({ connectionString: config.database.url });
  await client.connect();
  try {
    await client.query(`CREATE SCHEMA IF NOT EXISTS "${config.database.schema}"`);
  } finally {
    await client.end();
  }
}

@Global()
@Module({
  imports: [
    TypeOrmModule.forRootAsync({
      inject: [APP_CONFIG],
      useFactory: async (config: AppConfig) => {
        await ensureSchema(config);
        return {
          ...dataSourceOptions(config.database),
          autoLoadEntities: true,
          retryAttempts: 2,
          retryDelay: 500,
        };
      },
    }),
  ],
  providers: [DatabaseService, RefreshTokensRepository, CountersRepository],
  exports: [DatabaseService, RefreshTokensRepository, CountersRepository],
})
export class DatabaseModule {}
