import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { request as httpRequest } from 'node:http';
import { connect as netConnect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { testSchemaName, usingPostgres, usingRedis } from './helpers/app.js';
import { ROOT, serviceBuild } from './helpers/build.js';
import { request } from './helpers/http.js';
import { freePort } from './helpers/rate-limit.js';

/**
 * The compose shape without Docker: two replicas of the built service (`node dist/main.js`, real
 * processes) on one PostgreSQL schema and one Redis prefix, behind nginx running deploy/nginx.conf
 * itself (only the upstream addresses, the listen port and the log path are replaced), with the
 * settings docker-compose.yml gives them: TRUSTED_PROXIES = the proxy's address alone, METRICS_PORT
 * internal, no JWT_PRIVATE_KEY (the key is generated once into the DATA_DIR both replicas share).
 */
const NGINX = ['/usr/sbin/nginx', '/usr/local/sbin/nginx', '/usr/bin/nginx'].find((p) =>
  existsSync(p),
);
// nginx connects to the replicas from 127.0.0.1; clients come from other loopback addresses, as a
// client on the compose network comes from an address other than the proxy's.
const PROXY_ADDRESS = '127.0.0.1';
const ADMIN = { email: 'deploy-admin@example.com', password: 'deploy-admin-password' };

if (process.env.CI && !NGINX) {
  throw new Error('nginx is not installed: .ci/run installs it (apt-get install -y nginx)');
}
const reason = !(usingPostgres && usingRedis)
  ? ' (skipped: the replicas share PostgreSQL and Redis; runs with DATABASE_URL and REDIS_URL)'
  : !NGINX
    ? ' (skipped: nginx is not installed; apt-get install -y nginx)'
    : '';

interface Proc {
  name: string;
  child: ChildProcess;
  output: () => string;
  exited: Promise<void>;
}

function spawnProc(name: string, cmd: string, args: string[], env: NodeJS.ProcessEnv): Proc {
  const child = spawn(cmd, args, { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout?.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr?.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<void>((resolve) => child.on('exit', () => resolve()));
  return { name, child, output: () => out, exited };
}

async function waitFor200(url: string, proc: Proc): Promise<void> {
  await vi.waitFor(
    async () => {
      if (proc.child.exitCode !== null) {
        throw new Error(`${proc.name} exited:\n${proc.output()}`);
      }
      const res = await fetch(url).catch(() => undefined);
      expect(res?.status, `${proc.name} at ${url}:\n${proc.output().slice(-2000)}`).toBe(200);
    },
    { timeout: 90_000, interval: 100 }, // a replica boots in seconds, on a loaded machine in a minute,
  );
}

interface RawAnswer {
  status: number;
  body: string;
}

/** One request with the path sent byte for byte, from a chosen local address. */
function raw(
  port: number,
  path: string,
  opts: { method?: string; headers?: Record<string, string>; body?: unknown; from?: string } = {},
): Promise<RawAnswer> {
  const body = opts.body === undefined ? undefined : JSON.stringify(opts.body);
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      {
        host: '127.0.0.1',
        port,
        path,
        method: opts.method ?? 'GET',
        localAddress: opts.from,
        agent: false,
        headers: {
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
          ...opts.headers,
        },
      },
      (res) => {
        let text = '';
        res.on('data', (d: Buffer) => (text += d.toString()));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

/**
 * Writes `data` on a raw connection from `from` and returns the head of the first answer (the
 * status line and headers, and what came with them), then closes the connection.
 */
function rawUpgrade(port: number, data: string, from: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = netConnect({ host: '127.0.0.1', port, localAddress: from }, () =>
      socket.write(data),
    );
    let text = '';
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`no answer on ${port}: ${JSON.stringify(text)}`));
    }, 10_000);
    socket.setEncoding('latin1');
    socket.on('data', (chunk: string) => {
      text += chunk;
      if (text.includes('\r\n\r\n')) {
        clearTimeout(timer);
        socket.destroy();
        resolve(text);
      }
    });
    socket.on('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
  });
}

/** deploy/nginx.conf with the compose-only names replaced; each must be found exactly once. */
function siteConfig(upstreams: [number, number], port: number, accessLog: string): string {
  let text = readFileSync(join(ROOT, 'deploy/nginx.conf'), 'utf8');
  const swaps: [string, string][] = [
    ['server api1:3000 ', `server 127.0.0.1:${upstreams[0]} `],
    ['server api2:3000 ', `server 127.0.0.1:${upstreams[1]} `],
    ['listen 80;', `listen 127.0.0.1:${port};`],
    ['/var/log/nginx/access.log', accessLog],
  ];
  for (const [from, to] of swaps) {
    expect(text.split(from).length - 1, `deploy/nginx.conf has "${from}" once`).toBe(1);
    text = text.replace(from, to);
  }
  return text;
}

describe.skipIf(reason !== '')(
  `the compose shape: two replicas behind deploy/nginx.conf${reason}`,
  () => {
    let dir: string;
    const schema = testSchemaName();
    const procs: Proc[] = [];
    const apiPorts: [number, number] = [0, 0];
    const metricsPorts: [number, number] = [0, 0];
    let proxyPort = 0;
    let proxy: string;
    let accessLog: string;

    beforeAll(async () => {
      dir = mkdtempSync(join(tmpdir(), 'atrium-deploy-'));
      // a build of our own or CI's (test/helpers/build.ts): never dist/ while something rebuilds it
      const outDir = serviceBuild();

      for (const i of [0, 1]) {
        apiPorts[i] = await freePort();
        metricsPorts[i] = await freePort();
      }
      proxyPort = await freePort();
      proxy = `http://127.0.0.1:${proxyPort}`;
      const database = new URL(process.env.DATABASE_URL!);
      database.searchParams.set('schema', schema);
      const shared = {
        PATH: process.env.PATH ?? '',
        NODE_ENV: 'production',
        HOST: '127.0.0.1',
        PUBLIC_URL: proxy,
        DATABASE_URL: database.toString(),
        REDIS_URL: process.env.REDIS_URL!,
        REDIS_PREFIX: `atrium-deploy-${randomBytes(4).toString('hex')}:`,
        // the rate-limit assertions must not fail open on a loaded test machine (test/helpers/app.ts)
        REDIS_COMMAND_TIMEOUT_MS: '1000',
        DATA_DIR: join(dir, 'data'), // the shared `atrium-data` volume
        ADMIN_EMAIL: ADMIN.email,
        ADMIN_PASSWORD: ADMIN.password,
        TRUSTED_PROXIES: PROXY_ADDRESS,
        LOG_LEVEL: 'warn',
      };
      // as in compose: the second replica starts once the first is healthy (migrations at boot)
      for (const i of [0, 1]) {
        const proc = spawnProc(`api${i + 1}`, process.execPath, [join(outDir, 'main.js')], {
          ...shared,
          PORT: String(apiPorts[i]),
          METRICS_PORT: String(metricsPorts[i]),
        });
        procs.push(proc);
        await waitFor200(`http://127.0.0.1:${apiPorts[i]}/health/ready`, proc);
      }

      const prefix = join(dir, 'nginx');
      for (const sub of ['', 'body', 'proxy', 'fastcgi', 'uwsgi', 'scgi']) {
        mkdirSync(join(prefix, sub), { recursive: true });
      }
      accessLog = join(prefix, 'access.log');
      writeFileSync(join(prefix, 'site.conf'), siteConfig(apiPorts, proxyPort, accessLog));
      writeFileSync(
        join(prefix, 'nginx.conf'),
        [
          // as root, workers would drop to `nobody`, which cannot use this private temp dir
          process.getuid?.() === 0 ? 'user root;' : '',
          'daemon off;',
          'worker_processes 1;',
          `pid ${join(prefix, 'nginx.pid')};`,
          `error_log ${join(prefix, 'error.log')} warn;`,
          'events { worker_connections 256; }',
          'http {',
          `  client_body_temp_path ${join(prefix, 'body')};`,
          `  proxy_temp_path ${join(prefix, 'proxy')};`,
          `  fastcgi_temp_path ${join(prefix, 'fastcgi')};`,
          `  uwsgi_temp_path ${join(prefix, 'uwsgi')};`,
          `  scgi_temp_path ${join(prefix, 'scgi')};`,
          `  include ${join(prefix, 'site.conf')};`,
          '}',
          '',
        ].join('\n'),
      );
      const nginx = spawnProc(
        'nginx',
        NGINX!,
        ['-p', prefix, '-c', join(prefix, 'nginx.conf'), '-e', join(prefix, 'error.log')],
        { PATH: process.env.PATH ?? '' },
      );
      procs.push(nginx);
      await waitFor200(`${proxy}/health/live`, nginx);
    }, 360_000);

    afterAll(async () => {
      for (const proc of procs.reverse()) {
        if (proc.child.exitCode === null) {
          proc.child.kill('SIGTERM');
          await proc.exited;
        }
      }
      const client = new pg.Client({ connectionString: process.env.DATABASE_URL });
      await client.connect();
      await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
      await client.end();
      rmSync(dir, { recursive: true, force: true });
    }, 30_000);

    it('accepts a token issued by one replica on the other (one signing key, generated once into the shared data dir)', async () => {
      const token = await request(proxy, '/api/v1/auth/token', {
        method: 'POST',
        body: ADMIN,
      });
      expect(token.status).toBe(200);
      const bearer = { authorization: `Bearer ${token.body.access_token as string}` };
      for (const port of apiPorts) {
        const me = await request(`http://127.0.0.1:${port}`, '/api/v1/auth/me', {
          headers: bearer,
        });
        expect(me.status, `replica on ${port}`).toBe(200);
        expect(me.body.data.email).toBe(ADMIN.email);
      }
      // and through the proxy, whichever replica answers (round robin)
      for (let i = 0; i < 4; i++) {
        expect((await request(proxy, '/api/v1/auth/me', { headers: bearer })).status).toBe(200);
      }
      expect(readFileSync(join(dir, 'data', 'jwt-private.pem'), 'utf8')).toContain(
        'PRIVATE KEY-----',
      );
      // both replicas answered requests through the proxy
      await vi.waitFor(() => {
        const log = readFileSync(accessLog, 'utf8');
        for (const port of apiPorts) {
          expect(log).toContain(`upstream=127.0.0.1:${port}`);
        }
      });
    });

    it('keeps a client on one rate-limit identity through the proxy whatever X-Forwarded-For it sends (12 wrong passwords end in 429)', async () => {
      const statuses: number[] = [];
      for (let i = 0; i < 12; i++) {
        const res = await raw(proxyPort, '/api/v1/auth/token', {
          method: 'POST',
          from: '127.0.0.5',
          headers: { 'x-forwarded-for': `203.0.113.${i + 1}` },
          body: { email: `nobody-${i}@example.com`, password: 'wrong-password-123' },
        });
        statuses.push(res.status);
      }
      expect(statuses.slice(0, 10).every((s) => s === 401)).toBe(true);
      expect(statuses.slice(10)).toEqual([429, 429]);
      // another address behind the same proxy still has its own budget
      const other = await raw(proxyPort, '/api/v1/auth/token', {
        method: 'POST',
        from: '127.0.0.6',
        body: { email: 'nobody@example.com', password: 'wrong-password-123' },
      });
      expect(other.status).toBe(401);
    });

    it('ignores X-Forwarded-For from a peer that is not the proxy (a client reaching a replica directly)', async () => {
      const statuses: number[] = [];
      for (let i = 0; i < 12; i++) {
        const res = await raw(apiPorts[i % 2], '/api/v1/auth/token', {
          method: 'POST',
          from: '127.0.0.7',
          headers: { 'x-forwarded-for': `198.51.100.${i + 1}` },
          body: { email: `nobody-direct-${i}@example.com`, password: 'wrong-password-123' },
        });
        statuses.push(res.status);
      }
      expect(statuses.slice(10)).toEqual([429, 429]);
    });

    it('writes the access log with api_key redacted', async () => {
      const created = await request(proxy, '/api/v1/api-keys', {
        method: 'POST',
        auth: { basic: [ADMIN.email, ADMIN.password] },
        body: { name: 'deploy-log' },
      });
      expect(created.status).toBe(201);
      const secret = created.body.data.key as string;
      const marker = `log-${randomBytes(4).toString('hex')}`;
      const paths = [
        `/api/v1/users?api_key=${secret}&m=${marker}-1`,
        `/api/v1/users?page=1&API_KEY=${secret}&m=${marker}-2`,
        `/api/v1/users?m=${marker}-3&api%5Fkey=${secret}`,
        `/api/v1/users?m=${marker}-4&api_key=${secret}&api_key=${secret}`,
      ];
      for (const path of paths) {
        // (a key under another spelling is no credential to the app: 401; still never logged)
        expect((await raw(proxyPort, path)).status).toBeLessThan(500);
      }
      await vi.waitFor(() => {
        const log = readFileSync(accessLog, 'utf8');
        for (const n of [1, 2, 3]) {
          expect(log).toContain(`${marker}-${n}`);
        }
        expect(log).toMatch(/\/api\/v1\/users\?\[query redacted\]/);
      });
      const log = readFileSync(accessLog, 'utf8');
      expect(log).not.toContain(secret);
      expect(log).not.toContain(secret.slice(4));
      expect(log).toContain(`/api/v1/users?api_key=[redacted]&m=${marker}-1`);
      expect(log).toContain(`/api/v1/users?page=1&API_KEY=[redacted]&m=${marker}-2`);
      expect(log).toContain(`/api/v1/users?m=${marker}-3&api%5Fkey=[redacted]`);
    });

    it('answers an Upgrade on any path but /graphql and closes its socket: no fd of a replica leaks, through the proxy or directly', async () => {
      const fds = () => procs.slice(0, 2).map((p) => readdirSync(`/proc/${p.child.pid}/fd`).length);
      const upgrade = (path: string) =>
        `GET ${path} HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n` +
        'Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n';
      const baseline = fds();
      // the proxy forwards Upgrade on /graphql only: elsewhere the request is served as a plain one
      // (401: no credentials); directly, a replica refuses the upgrade (404, or 429 past the limit)
      const answers: string[] = [];
      for (let batch = 0; batch < 8; batch++) {
        const from = `127.0.1.${batch + 1}`; // a fresh address per batch: within its request limit
        answers.push(
          ...(await Promise.all(
            Array.from({ length: 50 }, (_, i) =>
              rawUpgrade(
                batch % 2 === 0 ? proxyPort : apiPorts[i % 2],
                upgrade('/api/v1/users'),
                from,
              ),
            ),
          )),
        );
      }
      const statuses = answers.map((a) => a.split(' ', 2)[1]);
      expect(new Set(statuses.filter((_, i) => Math.floor(i / 50) % 2 === 0))).toEqual(
        new Set(['401']),
      );
      expect(new Set(statuses.filter((_, i) => Math.floor(i / 50) % 2 === 1))).toEqual(
        new Set(['404']),
      );
      expect(answers[50]).toMatch(/^HTTP\/1\.1 404 .*\r\nConnection: close\r\n/s);
      expect(answers[50]).toContain('"code":"not_found"');
      await vi.waitFor(
        () => {
          // nginx keeps up to 32 idle upstream connections (`keepalive 32`), across both replicas
          const [a = 0, b = 0] = fds();
          expect(a + b).toBeLessThanOrEqual(baseline[0] + baseline[1] + 32 + 8);
        },
        { timeout: 15_000, interval: 200 },
      );
      // and /graphql still upgrades through the proxy
      const ws = await rawUpgrade(
        proxyPort,
        upgrade('/graphql').replace(
          '\r\n\r\n',
          '\r\nSec-WebSocket-Protocol: graphql-transport-ws\r\n\r\n',
        ),
        '127.0.1.20',
      );
      expect(ws).toMatch(/^HTTP\/1\.1 101 /);
    });

    it('serves Swagger UI and the GraphQL socket to a page opened at the proxy, whatever name it was opened at', async () => {
      // the document's server is relative: calls go to the proxy's address, not a replica's
      const doc = await raw(proxyPort, '/api/docs-json');
      expect(doc.status).toBe(200);
      expect(JSON.parse(doc.body).servers).toEqual([{ url: '/', description: expect.any(String) }]);
      // a page at http://dev-box.test:PORT (not PUBLIC_URL, not in CORS_ORIGINS) opens its socket
      const upgrade = (host: string, origin: string) =>
        `GET /graphql HTTP/1.1\r\nHost: ${host}\r\nOrigin: ${origin}\r\nConnection: Upgrade\r\n` +
        'Upgrade: websocket\r\nSec-WebSocket-Version: 13\r\n' +
        'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Protocol: graphql-transport-ws\r\n\r\n';
      const name = `dev-box.test:${proxyPort}`;
      const own = await rawUpgrade(proxyPort, upgrade(name, `http://${name}`), '127.0.1.30');
      expect(own).toMatch(/^HTTP\/1\.1 101 /);
      const other = await rawUpgrade(proxyPort, upgrade(name, 'http://evil.example'), '127.0.1.31');
      expect(other).toMatch(/^HTTP\/1\.1 403 /);
    });

    it('does not serve /metrics on the public port; each replica serves it on its internal port only', async () => {
      for (const path of ['/metrics', '/metrics/', '//metrics', '/%6Detrics', '/x/../metrics']) {
        const res = await raw(proxyPort, path);
        expect(res.status, path).toBe(404);
        expect(res.body, path).not.toContain('atrium_');
      }
      for (const i of [0, 1]) {
        const main = await raw(apiPorts[i], '/metrics');
        expect(main.status).toBe(404);
        expect(main.body).not.toContain('atrium_');
        const internal = await raw(metricsPorts[i], '/metrics');
        expect(internal.status).toBe(200);
        expect(internal.body).toContain('atrium_http_request_duration_seconds');
      }
    });
  },
);
