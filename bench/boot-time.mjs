// Boot time of the built app (createApp + listen, SQLite in memory) against a given Redis, and what
// /health/ready answers right after. Usage:
//   npm run build && node bench/boot-time.mjs redis://127.0.0.1:6379   # Redis up
//   node bench/boot-time.mjs redis://127.0.0.1:6390                      # nothing listening there
//   node bench/boot-time.mjs                                              # no Redis
// BOOT_RUNS (default 3) boots in a row; prints one JSON line per boot.
import 'reflect-metadata';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createApp } from '../dist/app.factory.js';
import { loadConfig } from '../dist/config/config.js';

const redis = process.argv[2] ?? '';
const runs = Number(process.env.BOOT_RUNS ?? 3);
const dataDir = mkdtempSync(join(tmpdir(), 'atrium-boot-'));
try {
  for (let i = 0; i < runs; i++) {
    const config = loadConfig({
      NODE_ENV: 'test',
      PORT: '0',
      DATABASE_URL: 'sqlite::memory:',
      REDIS_URL: redis,
      LOG_LEVEL: process.env.LOG_LEVEL ?? 'silent',
      DATA_DIR: dataDir,
    });
    const started = performance.now();
    const app = await createApp(config);
    await app.listen({ port: 0, host: '127.0.0.1' });
    const bootMs = Math.round(performance.now() - started);
    const { port } = app.getHttpServer().address();
    const res = await fetch(`http://127.0.0.1:${port}/health/ready`);
    const body = await res.json();
    console.log(
      JSON.stringify({
        redis: redis || 'none',
        bootMs,
        ready: res.status,
        redisStatus: body.details?.redis?.status ?? 'not configured',
      }),
    );
    await app.close();
  }
} finally {
  rmSync(dataDir, { recursive: true, force: true });
}
process.exit(0);
