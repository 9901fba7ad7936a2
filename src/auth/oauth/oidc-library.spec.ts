import { describe, expect, it } from 'vitest';
import { storageUsesPromiseHooks } from './oidc-library.js';

describe('storageUsesPromiseHooks (where the oidc-provider storage is released)', () => {
  it('is true on Node 20 and 22, false on Node 24 and later', () => {
    expect(storageUsesPromiseHooks('20.19.0', [])).toBe(true);
    expect(storageUsesPromiseHooks('22.15.0', [])).toBe(true);
    expect(storageUsesPromiseHooks('24.11.0', [])).toBe(false);
    expect(storageUsesPromiseHooks('25.0.0', [])).toBe(false);
  });

  it('follows the async context frame flags', () => {
    expect(storageUsesPromiseHooks('24.11.0', ['--no-async-context-frame'])).toBe(true);
    expect(storageUsesPromiseHooks('22.15.0', ['--experimental-async-context-frame'])).toBe(false);
  });
});
