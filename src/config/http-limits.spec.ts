import { describe, expect, it } from 'vitest';
import { loadConfig } from './config.js';

describe('HTTP limits configuration', () => {
  it('has the documented defaults', () => {
    expect(loadConfig({}).http).toEqual({
      headersTimeoutMs: 10_000,
      requestTimeoutMs: 30_000,
      keepAliveTimeoutMs: 72_000,
      bodyMaxDepth: 32,
      bodyMaxItems: 10_000,
    });
  });

  it('reads every variable', () => {
    const http = loadConfig({
      HTTP_HEADERS_TIMEOUT_MS: '5000',
      HTTP_REQUEST_TIMEOUT_MS: '20000',
      HTTP_KEEP_ALIVE_TIMEOUT_MS: '90000',
      BODY_MAX_DEPTH: '8',
      BODY_MAX_ITEMS: '500',
    }).http;
    expect(http).toEqual({
      headersTimeoutMs: 5000,
      requestTimeoutMs: 20000,
      keepAliveTimeoutMs: 90000,
      bodyMaxDepth: 8,
      bodyMaxItems: 500,
    });
  });

  it('refuses a request timeout shorter than the header timeout, in one line naming the variable', () => {
    expect(() =>
      loadConfig({ HTTP_HEADERS_TIMEOUT_MS: '20000', HTTP_REQUEST_TIMEOUT_MS: '10000' }),
    ).toThrow(/^Invalid configuration: HTTP_REQUEST_TIMEOUT_MS must be at least/);
    expect(() => loadConfig({ BODY_MAX_DEPTH: '0' })).toThrow(/BODY_MAX_DEPTH must be between/);
  });
});

describe('shutdown configuration', () => {
  it('has the documented defaults and reads both variables', () => {
    expect(loadConfig({}).shutdown).toEqual({ drainDelayMs: 0, graceMs: 8_000 });
    expect(
      loadConfig({ SHUTDOWN_DRAIN_DELAY_MS: '5000', SHUTDOWN_GRACE_MS: '25000' }).shutdown,
    ).toEqual({ drainDelayMs: 5_000, graceMs: 25_000 });
  });

  it('refuses a grace period that does not outlast the drain delay', () => {
    expect(() => loadConfig({ SHUTDOWN_DRAIN_DELAY_MS: '8000' })).toThrow(
      'SHUTDOWN_GRACE_MS must be longer than SHUTDOWN_DRAIN_DELAY_MS (8000), got 8000',
    );
  });
});
