import { existsSync } from 'node:fs';
import { chromium, type Browser } from 'playwright-core';

/** Debian's Chromium (`.ci/run` installs it when missing); `CHROMIUM_PATH` points elsewhere. */
export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

/**
 * Browser suites run where Chromium is installed, and always in CI, where a missing browser fails
 * the suite instead of skipping it.
 */
export const browserTestsRun = existsSync(CHROMIUM) || Boolean(process.env.CI);

/** Appended to a browser suite's title: why it is skipped here, when it is. */
export const browserSkipReason = browserTestsRun
  ? ''
  : ` (skipped: no Chromium at ${CHROMIUM}; \`apt-get install -y chromium\`, CI installs it)`;

/**
 * Headless, without the sandbox (tests run as root) and without Chromium's background network
 * (this machine's closed network refuses it, many connections at a time).
 */
export const CHROMIUM_ARGS: readonly string[] = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

/** A host name that is not loopback (no secure-context exemption), mapped to 127.0.0.1 by Chromium. */
export const LAN_NAME = 'dev-box.test';

/** Chromium with {@link CHROMIUM_ARGS}; `lanName` also maps {@link LAN_NAME} to this machine. */
export function launchChromium(options: { lanName?: boolean } = {}): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    args: [
      ...CHROMIUM_ARGS,
      ...(options.lanName ? [`--host-resolver-rules=MAP ${LAN_NAME} 127.0.0.1`] : []),
    ],
  });
}
