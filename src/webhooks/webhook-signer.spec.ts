import { Webhook } from 'standardwebhooks';
import { describe, expect, it } from 'vitest';
import { newWebhookSecret, signatureHeaders } from './webhook-signer.js';

describe('signatureHeaders', () => {
  it('signs as the standardwebhooks package does, and it verifies the result', () => {
    const secret = newWebhookSecret();
    const body = JSON.stringify({
      id: 'evt_1',
      type: 'post.created',
      data: { object: { é: '✓' } },
    });
    const at = new Date();
    const headers = signatureHeaders('evt_1', body, [secret], at);
    expect(headers['webhook-signature']).toBe(new Webhook(secret).sign('evt_1', at, body));
    expect(new Webhook(secret).verify(body, headers)).toEqual(JSON.parse(body));
  });

  it('carries one signature per live secret, each verifiable on its own', () => {
    const [current, previous] = [newWebhookSecret(), newWebhookSecret()];
    const body = '{"ok":true}';
    const headers = signatureHeaders('evt_2', body, [current, previous]);
    expect(headers['webhook-signature'].split(' ')).toHaveLength(2);
    for (const secret of [current, previous]) {
      expect(new Webhook(secret).verify(body, headers)).toEqual({ ok: true });
    }
    expect(() => new Webhook(newWebhookSecret()).verify(body, headers)).toThrow();
  });
});
