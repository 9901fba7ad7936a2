# syntax=docker/dockerfile:1
# Atrium API image. Build: docker build -t atrium .   Run: see docker-compose.yml.

# ---- build: compile TypeScript and the native addons (better-sqlite3 builds with node-gyp) ----
# better-sqlite3 12 is built from source against Node 24.18.1's headers: built against the headers of
# 24.19 or later it aborts the process when a statement is garbage-collected (docs/deployment.md,
# "Node.js"). The binary runs on every later Node 24 (same ABI); CI runs the tests that way.
FROM node:24.18.1-bookworm-slim AS build
ENV npm_config_build_from_source=true
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 make g++ \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY package.json package-lock.json ./
# npm ci applies patches/ (patch-package, postinstall: docs/performance.md)
COPY patches ./patches
RUN npm ci --no-audit --no-fund
COPY . .
RUN npm run build \
 && npm prune --omit=dev --no-audit --no-fund

# ---- runtime: production dependencies and dist/ only, as the unprivileged `node` user ----------
FROM node:24-bookworm-slim AS runtime
ENV NODE_ENV=production PORT=3000 HOST=0.0.0.0
WORKDIR /app
# Code stays root-owned (read-only for the app); only data/ (SQLite file, generated JWT key) is writable:
# mount a volume there (docker-compose.yml shares one between the replicas).
COPY --from=build /app/package.json ./package.json
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
RUN mkdir -p /app/data && chown node:node /app/data
USER node
# 3000: the API; 9464: /metrics when METRICS_PORT=9464 (keep it off the public network)
EXPOSE 3000 9464
HEALTHCHECK --interval=10s --timeout=3s --start-period=30s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.PORT || 3000) + '/health/live').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
CMD ["node", "dist/main.js"]
