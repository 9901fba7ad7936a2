// `node bench/trace-waterfall.mjs` (after `npm run build`): the picture of docs/operations.md
// "Following one request". No trace viewer can be installed here (Jaeger's and Zipkin's UIs are not
// npm packages), so this script is the viewer: it runs the built service with tracing on against an
// OTLP/JSON receiver of its own, makes one change that a webhook endpoint receives (the receiver
// answers 500 first, then 200: one retry), and draws the trace of that request as a waterfall in an
// HTML page, screenshotted with Chromium into docs/images/trace-waterfall.png.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const OUT = join(ROOT, 'docs', 'images', 'trace-waterfall.png');
const ADMIN = { email: 'trace-admin@example.com', password: 'trace-admin-password-1' };

/** An HTTP server on loopback; its base URL. */
async function listen(handler) {
  const server = createServer(handler);
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  return { server, url: `http://127.0.0.1:${server.address().port}` };
}

const spans = [];
const otlp = await listen((req, res) => {
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    const body = JSON.parse(Buffer.concat(chunks).toString());
    for (const rs of body.resourceSpans) {
      for (const ss of rs.scopeSpans) {
        spans.push(...ss.spans);
      }
    }
    res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
  });
});
let deliveries = 0;
const receiver = await listen((req, res) => {
  req.resume();
  req.on('end', () => {
    deliveries += 1;
    res.writeHead(deliveries === 1 ? 500 : 200).end();
  });
});

const dir = mkdtempSync(join(tmpdir(), 'atrium-waterfall-'));
const port = 20000 + Math.floor(Math.random() * 20000);
const base = `http://127.0.0.1:${port}`;
const app = spawn(process.execPath, [join(ROOT, 'dist', 'main.js')], {
  cwd: ROOT,
  stdio: 'ignore',
  env: {
    PATH: process.env.PATH,
    NODE_ENV: 'production',
    PORT: String(port),
    DATA_DIR: dir,
    DATABASE_URL: `sqlite:${join(dir, 'waterfall.sqlite')}`,
    ADMIN_EMAIL: ADMIN.email,
    ADMIN_PASSWORD: ADMIN.password,
    LOG_LEVEL: 'warn',
    WEBHOOK_ALLOWED_HOSTS: '127.0.0.1',
    WEBHOOK_RETRY_SCHEDULE_S: '1',
    OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url,
    OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
    OTEL_BSP_SCHEDULE_DELAY: '100',
  },
});

async function call(method, path, body, headers = {}) {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: { 'content-type': 'application/json', ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, headers: res.headers, json: await res.json().catch(() => null) };
}

try {
  for (let i = 0; ; i++) {
    const ready = await fetch(`${base}/health/ready`).catch(() => undefined);
    if (ready?.status === 200) {
      break;
    }
    if (i > 600) {
      throw new Error('the service did not become ready');
    }
    await sleep(100);
  }
  const token = (await call('POST', '/api/v1/auth/token', ADMIN)).json.access_token;
  const auth = { authorization: `Bearer ${token}` };
  await call(
    'POST',
    '/api/v1/webhooks',
    { url: `${receiver.url}/hook`, events: ['user.created'] },
    auth,
  );
  const traceId = randomBytes(16).toString('hex');
  const created = await call(
    'POST',
    '/api/v1/users',
    { email: 'ada@example.com', name: 'Ada', password: 'a-long-password-1' },
    { ...auth, traceparent: `00-${traceId}-${randomBytes(8).toString('hex')}-01` },
  );
  if (created.status !== 201) {
    throw new Error(`POST /api/v1/users answered ${created.status}`);
  }
  const done = () =>
    spans.filter((s) => s.traceId === traceId && s.name.startsWith('POST webhook'));
  for (let i = 0; done().length < 2; i++) {
    if (i > 300) {
      throw new Error('the two delivery attempts were not traced');
    }
    await sleep(100);
  }
  await sleep(500);
  const trace = spans.filter((s) => s.traceId === traceId);
  await screenshot(traceId, trace);
  console.log(`${trace.length} spans of trace ${traceId} drawn into ${OUT}`);
} finally {
  app.kill('SIGKILL');
  otlp.server.close();
  receiver.server.close();
  rmSync(dir, { recursive: true, force: true });
}

/** The spans in tree order (each after its parent), with their depth. */
function ordered(trace) {
  const ids = new Set(trace.map((s) => s.spanId));
  const roots = trace.filter((s) => !s.parentSpanId || !ids.has(s.parentSpanId));
  const out = [];
  const visit = (span, depth) => {
    out.push({ span, depth });
    trace
      .filter((s) => s.parentSpanId === span.spanId)
      .sort((a, b) => Number(BigInt(a.startTimeUnixNano) - BigInt(b.startTimeUnixNano)))
      .forEach((child) => visit(child, depth + 1));
  };
  roots.forEach((r) => visit(r, 0));
  return out;
}

/** Text safe in HTML. */
function escape(text) {
  return String(text).replace(
    /[&<>"]/g,
    (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[c],
  );
}

async function screenshot(traceId, trace) {
  const rows = ordered(trace);
  const t0 = Math.min(...trace.map((s) => Number(BigInt(s.startTimeUnixNano) / 1000n)));
  const t1 = Math.max(...trace.map((s) => Number(BigInt(s.endTimeUnixNano) / 1000n)));
  const width = Math.max(1, t1 - t0);
  const colour = { 1: '#7b61ff', 2: '#1f77b4', 3: '#2ca02c' };
  const detail = (s) => {
    const a = Object.fromEntries(
      (s.attributes ?? []).map((x) => [x.key, Object.values(x.value)[0]]),
    );
    return (
      a['http.route'] ??
      a['db.query.text'] ??
      (a['http.response.status_code'] !== undefined
        ? `attempt ${a['atrium.webhook.attempt'] ?? ''} → HTTP ${a['http.response.status_code']}`
        : '')
    );
  };
  const html = `<!doctype html><meta charset="utf-8"><style>
    body{font:13px system-ui,sans-serif;margin:16px;color:#222;width:1240px}
    h1{font-size:16px;margin:0 0 4px} p{margin:0 0 12px;color:#555}
    .row{display:flex;align-items:center;height:22px;border-bottom:1px solid #eee}
    .name{width:470px;white-space:nowrap;overflow:hidden;text-overflow:ellipsis}
    .lane{position:relative;flex:1;height:14px}
    .bar{position:absolute;height:14px;border-radius:2px;min-width:2px}
    .err{outline:2px solid #d62728}
    .ms{width:80px;text-align:right;color:#555}
    .d{color:#777;font-size:11px}</style>
    <h1>Trace ${traceId}</h1>
    <p>POST /api/v1/users with a caller's traceparent, and the webhook deliveries of that change (the
    receiver answered 500, then 200 a second later). Spans as the OTLP exporter sent them; colour: server
    (blue), client (green), internal (purple); a red outline is a span with an error status.</p>
    ${rows
      .map(({ span: s, depth }) => {
        const start = Number(BigInt(s.startTimeUnixNano) / 1000n) - t0;
        const dur = Number((BigInt(s.endTimeUnixNano) - BigInt(s.startTimeUnixNano)) / 1000n);
        return `<div class="row"><div class="name" style="padding-left:${depth * 14}px">${escape(s.name)}
          <span class="d">${escape(String(detail(s)).slice(0, 60))}</span></div>
          <div class="lane"><div class="bar ${s.status?.code === 2 ? 'err' : ''}" style="left:${(start / width) * 100}%;width:${(dur / width) * 100}%;background:${colour[s.kind] ?? '#999'}"></div></div>
          <div class="ms">${(dur / 1000).toFixed(2)} ms</div></div>`;
      })
      .join('\n')}`;
  const browser = await chromium.launch({
    executablePath: '/usr/bin/chromium',
    args: ['--no-sandbox'],
  });
  try {
    const page = await browser.newPage({ viewport: { width: 1280, height: 400 } });
    await page.setContent(html);
    await page.screenshot({ path: OUT, fullPage: true });
  } finally {
    await browser.close();
  }
}
