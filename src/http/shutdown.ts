import { setTimeout as sleep } from 'node:timers/promises';
import { Injectable, Logger, type INestApplication } from '@nestjs/common';
import type { ShutdownConfig } from '../config/config.js';

/**
 * Whether the process is shutting down. From the signal on, `/health/ready` answers 503, responses
 * carry `Connection: close` and WebSocket upgrades are refused (503), while requests are still
 * served (docs/limits.md "Shutdown").
 */
@Injectable()
export class ShutdownState {
  draining = false;

  beginDraining(): void {
    this.draining = true;
  }
}

/**
 * SIGTERM/SIGINT: readiness fails at once, requests keep being served for SHUTDOWN_DRAIN_DELAY_MS
 * (load balancers take the instance out of rotation), then the application closes: WebSockets are
 * closed with 1001, no new connection is accepted, requests in flight are answered, requests arriving
 * on an open keep-alive connection get 503. The process exits 0 once everything is closed, or 1 when
 * SHUTDOWN_GRACE_MS after the signal something is still open. A second signal exits at once (1).
 */
export function installGracefulShutdown(
  app: INestApplication,
  config: ShutdownConfig,
  exit: (code: number) => void = (code) => process.exit(code),
): void {
  const logger = new Logger('Shutdown');
  let started = false;
  const onSignal = (signal: NodeJS.Signals) => {
    if (started) {
      logger.warn(`${signal} again: exiting without waiting`);
      exit(1);
      return;
    }
    started = true;
    void shutdown(signal);
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);

  async function shutdown(signal: NodeJS.Signals): Promise<void> {
    const began = Date.now();
    const deadline = setTimeout(() => {
      logger.error(
        `not closed within SHUTDOWN_GRACE_MS (${config.graceMs} ms): exiting with connections still open`,
      );
      exit(1);
    }, config.graceMs);
    deadline.unref();
    app.get(ShutdownState).beginDraining();
    logger.log(
      `${signal}: draining (readiness 503) for ${config.drainDelayMs} ms, then closing; exit within ${config.graceMs} ms`,
    );
    if (config.drainDelayMs > 0) {
      await sleep(config.drainDelayMs);
    }
    try {
      await app.close();
    } catch (err) {
      logger.error({ err }, 'shutdown failed');
      exit(1);
      return;
    }
    clearTimeout(deadline);
    logger.log(`closed in ${Date.now() - began} ms`);
    exit(0);
  }
}
