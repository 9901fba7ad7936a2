import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApp, type TestApp } from './helpers/app.js';
import { adminClient } from './helpers/factories.js';

describe('harness', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startApp();
  });
  afterAll(async () => {
    await t.close();
  });

  it('serves the admin created at boot', async () => {
    const admin = await adminClient(t.url);
    const res = await admin.get('/api/v1/auth/me');
    expect(res.status).toBe(200);
    expect(res.body.data.role).toBe('ADMIN');
  });
});
