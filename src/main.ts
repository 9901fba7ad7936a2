// first: the tracing SDK patches the instrumented libraries as they load (docs/operations.md)
import './telemetry/preload.js';
import 'reflect-metadata';
import { Logger } from '@nestjs/common';
import { createApp } from './app.factory.js';
import { installHeaderDeadline } from './http/header-deadline.js';
import { installGracefulShutdown } from './http/shutdown.js';
import { ConfigError, loadConfigFromEnvironment, type AppConfig } from './config/config.js';

let config: AppConfig;
try {
  config = loadConfigFromEnvironment();
} catch (err) {
  if (err instanceof ConfigError) {
    console.error(err.message); // one clear line naming the variable
    process.exit(1);
  }
  throw err;
}

const app = await createApp(config);
installHeaderDeadline(app.getHttpServer(), config.http.headersTimeoutMs);
await app.listen({ port: config.port, host: config.host });
installGracefulShutdown(app, config.shutdown);
new Logger('Atrium').log(
  `Listening on ${config.host}:${config.port} (public URL ${config.publicUrl})`,
);
