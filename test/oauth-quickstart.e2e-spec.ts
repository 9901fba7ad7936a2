import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_EMAIL, ADMIN_PASSWORD, startApp, type TestApp } from './helpers/app.js';
import { browserSkipReason, browserTestsRun, CHROMIUM, CHROMIUM_ARGS } from './helpers/chromium.js';
import { createUser, type CreatedUser } from './helpers/factories.js';

const ROOT = resolve(import.meta.dirname, '..');
const DOC = join(ROOT, 'docs', 'oauth.md');
const SHOTS = process.env.OAUTH_SCREENSHOTS ?? join(tmpdir(), 'atrium-oauth-screenshots');

/** A 64x64 PNG (a white square on orange) served as the partner's logo. */
const LOGO = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAEAAAABACAIAAAAlC+aJAAAAZ0lEQVR4nO3PsQ2AMBAEQQe0Sf90gWsgsBZb89r0pZvx3NfWjXwBQL0AoF4AUC8AqBcA1AsAvv+8Kw8AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAADgPMCvAqgDqAOoA6gDqNseMAGEyZy5XE1/pgAAAABJRU5ErkJggg==',
  'base64',
);

interface Block {
  lang: string;
  code: string;
}

/** The code blocks of the quick start section of docs/oauth.md, in order. */
function quickStartBlocks(): Block[] {
  const doc = readFileSync(DOC, 'utf8');
  const start = doc.indexOf('## Quick start for a partner');
  const end = doc.indexOf('\n## ', start + 1);
  const section = doc.slice(start, end);
  return [...section.matchAll(/```(\w+)\n([\s\S]*?)```/g)].map(([, lang, code]) => ({
    lang: lang,
    code: code,
  }));
}

/** The sample answers of a block: its `# {…}` or `# 200` comment lines. */
function samples(code: string): string[] {
  return code
    .split('\n')
    .filter((l) => /^# [{\d]/.test(l))
    .map((l) => l.slice(2));
}

/**
 * A sample answer matches a real one: the same members (nested objects too), and every value
 * written out in full (no `…`) equal; `…` stands for any text in a string.
 */
function expectSampleMatches(sample: unknown, real: unknown, where: string): void {
  if (typeof sample === 'string') {
    expect(typeof real, where).toBe('string');
    const pattern = new RegExp(
      `^${sample
        .split('…')
        .map((p) => p.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))
        .join('.*')}$`,
      's',
    );
    expect(real, where).toMatch(pattern);
    return;
  }
  if (Array.isArray(sample)) {
    expect(real, where).toBeInstanceOf(Array);
    expect((real as unknown[]).length, where).toBe(sample.length);
    sample.forEach((v, i) => expectSampleMatches(v, (real as unknown[])[i], `${where}[${i}]`));
    return;
  }
  if (sample !== null && typeof sample === 'object') {
    expect(real, where).toBeTypeOf('object');
    expect(Object.keys(real as object).sort(), where).toEqual(Object.keys(sample).sort());
    for (const [k, v] of Object.entries(sample)) {
      expectSampleMatches(v, (real as Record<string, unknown>)[k], `${where}.${k}`);
    }
    return;
  }
  expect(real, where).toEqual(sample);
}

/** A command run to its end without blocking this process (the app under test runs in it). */
function run(
  cmd: string,
  args: string[],
): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((ok) => {
    const child = spawn(cmd, args, { timeout: 30_000 });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('close', (status) => ok({ status, stdout, stderr }));
  });
}

function freePort(): Promise<number> {
  return new Promise((ok, fail) => {
    const srv = createServer();
    srv.on('error', fail);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as { port: number };
      srv.close(() => ok(port));
    });
  });
}

/**
 * docs/oauth.md's quick start, run as written: its shell blocks one after the other in bash (the
 * variables one block sets are there for the next), the person's browser steps in Chromium, and
 * the openid-client sample app as a node process. The sample answers in the blocks must match what
 * the server answers.
 */
describe.skipIf(!browserTestsRun)(
  `the docs/oauth.md quick start, run as written${browserSkipReason}`,
  () => {
    let t: TestApp;
    let user: CreatedUser;
    let context: BrowserContext;
    let work: string;
    let callback: string;

    beforeAll(async () => {
      const port = await freePort();
      t = await startApp({ PORT: String(port), PUBLIC_URL: `http://localhost:${port}` });
      user = await createUser(t.url);
      callback = `http://127.0.0.1:${await freePort()}/callback`;
      // next to node_modules, so the sample app's `import 'openid-client'` resolves as in a project
      mkdirSync(join(ROOT, 'node_modules', '.cache'), { recursive: true });
      work = mkdtempSync(join(ROOT, 'node_modules', '.cache', 'quickstart-'));
      context = await chromium.launchPersistentContext(join(work, 'profile'), {
        executablePath: CHROMIUM,
        viewport: { width: 390, height: 844 },
        deviceScaleFactor: 2,
        isMobile: true,
        args: [...CHROMIUM_ARGS],
      });
      // the partner's logo host is not reachable from here: the browser gets the image from the test
      await context.route('https://invoices.acme.example/**', (route) =>
        route.fulfill({ status: 200, contentType: 'image/png', body: LOGO }),
      );
      mkdirSync(SHOTS, { recursive: true });
    });
    afterAll(async () => {
      await context?.close();
      await t?.close();
      if (work) {
        rmSync(work, { recursive: true, force: true });
      }
    });

    /** The person: opens the address, signs in, checks the consent page, allows. */
    async function personAllows(page: Page, address: string, shot?: string): Promise<void> {
      await page.goto(address);
      if (await page.locator('input[name="password"]').count()) {
        await page.getByLabel('Email').fill(user.email);
        await page.getByLabel('Password').fill(user.password);
        await page.getByRole('button', { name: 'Sign in' }).click();
      }
      const allow = page.getByRole('button', { name: 'Allow' });
      await allow.waitFor();
      if (shot) {
        // the logo is loaded by the browser under the page's CSP (img-src https:)
        const logo = page.locator('img.app-logo');
        await expect
          .poll(() =>
            logo.evaluate((img) => (img as unknown as { naturalWidth: number }).naturalWidth),
          )
          .toBe(64);
        expect(await page.getByRole('link', { name: 'Privacy policy' }).getAttribute('href')).toBe(
          'https://invoices.acme.example/privacy',
        );
        await page.screenshot({ path: join(SHOTS, shot), fullPage: true });
      }
      await allow.click();
    }

    it('runs the shell steps and the openid-client sample app against the app', async () => {
      const blocks = quickStartBlocks();
      const shell = blocks.filter((b) => b.lang === 'sh');
      const js = blocks.filter((b) => b.lang === 'js');
      expect(shell.length).toBeGreaterThanOrEqual(6);
      expect(js).toHaveLength(1);

      // the shell: each block sourced after the variables of the ones before (set -a keeps them)
      const state = join(work, 'state.sh');
      writeFileSync(
        state,
        [
          `export ATRIUM=${JSON.stringify(`http://localhost:${new URL(t.url).port}`)}`,
          `export CALLBACK=${JSON.stringify(callback)}`,
          `export ADMIN_EMAIL=${JSON.stringify(ADMIN_EMAIL)}`,
          `export ADMIN_PASSWORD=${JSON.stringify(ADMIN_PASSWORD)}`,
        ].join('\n') + '\n',
      );
      const page = await context.newPage();
      for (const [i, block] of shell.entries()) {
        const script = join(work, `block-${i}.sh`);
        writeFileSync(script, block.code);
        const ran = await run('bash', [
          '-c',
          `set -ae; source "$1"; source "$2"; export -p > "$1"`,
          'quickstart',
          state,
          script,
        ]);
        expect(ran.stderr, `block ${i}:\n${block.code}`).toBe('');
        expect(ran.status, `block ${i}:\n${block.code}`).toBe(0);
        const out = ran.stdout.trim();
        for (const sample of samples(block.code)) {
          const answer = out.split('\n').at(-1)!;
          if (sample.startsWith('{')) {
            expectSampleMatches(JSON.parse(sample), JSON.parse(answer), `block ${i}`);
          } else {
            expect(answer, `block ${i}`).toBe(sample);
          }
        }
        if (out.includes('/oauth/auth?')) {
          // the person's step: open the address, sign in, allow; the browser lands at CALLBACK,
          // where nothing listens, and the person copies `code` from the address bar
          let landed: URL | undefined;
          await page.route(`${callback}**`, async (route) => {
            landed = new URL(route.request().url());
            await route.fulfill({ status: 502, body: 'nothing listens here' });
          });
          await personAllows(page, out, 'quickstart-consent.png');
          await expect.poll(() => landed, { timeout: 15_000 }).toBeDefined();
          await page.unroute(`${callback}**`);
          const vars = readFileSync(state, 'utf8');
          const stateValue = /STATE="([^"]+)"/.exec(vars)?.[1];
          expect(landed!.searchParams.get('state')).toBe(stateValue);
          expect(landed!.searchParams.get('iss')).toBe(`${new URL(out).origin}/oauth`);
          writeFileSync(
            state,
            `${vars}export CODE=${JSON.stringify(landed!.searchParams.get('code'))}\n`,
          );
        }
      }
      const vars = readFileSync(state, 'utf8');
      const value = (name: string) => new RegExp(`${name}="([^"]*)"`).exec(vars)?.[1] ?? '';
      expect(value('CODE')).not.toBe('');

      // the sample app, started as the page says, with the variables of the shell above
      const file = join(work, 'quickstart.mjs');
      writeFileSync(file, js[0].code);
      const child = spawn(process.execPath, [file], {
        cwd: work,
        env: {
          ...process.env,
          ATRIUM: value('ATRIUM'),
          CALLBACK: value('CALLBACK'),
          CLIENT_ID: value('CLIENT_ID'),
          CLIENT_SECRET: value('CLIENT_SECRET'),
        },
      });
      let out = '';
      let err = '';
      child.stdout.on('data', (d: Buffer) => (out += d.toString()));
      child.stderr.on('data', (d: Buffer) => (err += d.toString()));
      const exited = new Promise<number | null>((ok) => child.on('exit', ok));
      await expect
        .poll(() => /Open in a browser: (\S+)/.exec(out)?.[1], { timeout: 20_000 })
        .toBeTruthy();
      const address = /Open in a browser: (\S+)/.exec(out)![1];
      // the browser is still signed in; step 6 revoked the grant, so the person allows again
      await personAllows(page, address);
      await page.waitForURL(`${callback}**`);
      expect(await page.textContent('body')).toContain('Signed in');
      expect(await exited, err).toBe(0);
      expect(out).toContain('granted: email users:read');
      expect(out).toContain(`signed in as ${user.email} (${user.id})`);
      expect(out).toContain('refreshed, then revoked');
      await page.close();
    }, 90_000);
  },
);
