import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApp, type TestApp } from './helpers/app.js';
import { adminClient } from './helpers/factories.js';

/** What docs/webhooks.md "A receiver on your own machine" prints: the variable and the request body. */
function documented(): { allowed: string; body: Record<string, unknown> } {
  const doc = readFileSync('docs/webhooks.md', 'utf8');
  const start = doc.indexOf('### A receiver on your own machine');
  expect(start, 'docs/webhooks.md has the section').toBeGreaterThan(0);
  const section = doc.slice(start, doc.indexOf('\n## ', start));
  const allowed = /^WEBHOOK_ALLOWED_HOSTS=(\S+) npm start$/m.exec(section)?.[1];
  const http = /```http\n([\s\S]*?)```/.exec(section)?.[1] ?? '';
  expect(http).toMatch(/^POST \/api\/v1\/webhooks$/m);
  const body = http.slice(http.indexOf('\n\n') + 2).trim();
  return { allowed: allowed ?? '', body: JSON.parse(body) as Record<string, unknown> };
}

describe('docs/webhooks.md: a receiver on your own machine', () => {
  const example = documented();
  let allowing: TestApp;
  let strict: TestApp;

  beforeAll(async () => {
    allowing = await startApp({ WEBHOOK_ALLOWED_HOSTS: example.allowed });
    strict = await startApp();
  });
  afterAll(async () => {
    await allowing.close();
    await strict.close();
  });

  it('the printed registration is accepted with the printed WEBHOOK_ALLOWED_HOSTS (201) and refused without it (422)', async () => {
    expect(example.allowed).not.toBe('');
    const accepted = await (await adminClient(allowing.url)).post('/api/v1/webhooks', example.body);
    expect(accepted.status, JSON.stringify(accepted.body)).toBe(201);
    expect(accepted.body.data.url).toBe(example.body.url);

    const refused = await (await adminClient(strict.url)).post('/api/v1/webhooks', example.body);
    expect(refused.status).toBe(422);
  });
});
