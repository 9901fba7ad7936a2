import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApp, type TestApp } from './helpers/app.js';
import { adminClient } from './helpers/factories.js';
import type { Client } from './helpers/http.js';
import { eventually } from './helpers/webhook-receiver.js';

const DOC = new URL('../docs/webhooks.md', import.meta.url);
// inside the repository, so `standardwebhooks` resolves from its node_modules
const DIR = new URL('../node_modules/.cache/webhooks-doc/', import.meta.url);

/** The receiver snippet of docs/webhooks.md: the js block after the `receiver-snippet` marker. */
function receiverSnippet(): string {
  const doc = readFileSync(DOC, 'utf8');
  const match = /<!-- receiver-snippet -->\s*```js\n([\s\S]*?)```/.exec(doc);
  if (!match?.[1]) {
    throw new Error('docs/webhooks.md has no receiver snippet');
  }
  return match[1];
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

describe('docs/webhooks.md: the receiver snippet verifies real deliveries', () => {
  let t: TestApp;
  let admin: Client;
  let child: ChildProcess | undefined;
  let output = '';
  const file = new URL(`receiver-${randomBytes(4).toString('hex')}.mjs`, DIR);

  beforeAll(async () => {
    t = await startApp({ WEBHOOK_ALLOWED_HOSTS: '127.0.0.1' });
    admin = await adminClient(t.url);
  });

  afterAll(async () => {
    child?.kill();
    await t?.close();
    rmSync(file, { force: true });
  });

  it('accepts signed events once (de-duplicated by webhook-id) and refuses a forged one with 400', async () => {
    const port = await freePort();
    const res = await admin.post('/api/v1/webhooks', {
      url: `http://127.0.0.1:${port}/atrium`,
      events: ['post.created'],
    });
    expect(res.status).toBe(201);
    const { id, secret } = res.body.data as { id: string; secret: string };

    mkdirSync(DIR, { recursive: true });
    writeFileSync(file, receiverSnippet());
    child = spawn(process.execPath, [file.pathname], {
      env: { ...process.env, WEBHOOK_SECRET: secret, PORT: String(port) },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    await eventually(async () => {
      try {
        return (
          (await fetch(`http://127.0.0.1:${port}/`, { method: 'POST', body: '{}' })).status === 400
        );
      } catch {
        return false;
      }
    });

    // a forged delivery (no valid signature) is refused
    const forged = await fetch(`http://127.0.0.1:${port}/atrium`, {
      method: 'POST',
      headers: {
        'webhook-id': 'evt_forged',
        'webhook-timestamp': String(Math.floor(Date.now() / 1000)),
        'webhook-signature': `v1,${Buffer.alloc(32).toString('base64')}`,
      },
      body: '{"type":"post.created"}',
    });
    expect(forged.status).toBe(400);

    const post = await admin.post('/api/v1/posts', { title: 'doc', body: 'x' });
    expect(post.status).toBe(201);
    await eventually(async () => output.includes(post.body.data.id as string));
    // the outcome is written shortly after the receiver answered (outcomes are recorded in batches)
    const delivery = await eventually(async () => {
      const row = (await admin.get(`/api/v1/webhooks/${id}/deliveries`)).body.data[0];
      return row?.status === 'pending' ? undefined : row;
    });
    expect(delivery).toMatchObject({ status: 'succeeded', last_status_code: 204 });

    // a redelivery verifies too, and the snippet's de-duplication drops it
    const again = await admin.post(`/api/v1/webhooks/${id}/deliveries/${delivery.id}/redeliver`);
    expect(again.status).toBe(202);
    await eventually(async () => {
      const rows = (await admin.get(`/api/v1/webhooks/${id}/deliveries`)).body.data;
      return rows.length === 2 && rows.every((r: { status: string }) => r.status === 'succeeded');
    });
    const lines = output
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(lines).toEqual([
      { id: delivery.event_id, type: 'post.created', object: post.body.data.id },
    ]);
  });
});
