import { createHmac, randomBytes } from 'node:crypto';

/** A new signing secret in the Standard Webhooks form: `whsec_` + base64 of 32 random bytes. */
export function newWebhookSecret(): string {
  return `whsec_${randomBytes(32).toString('base64')}`;
}

const SECRET_PREFIX = 'whsec_';
/** Decoded keys of the secrets in use (a few per endpoint); cleared when it grows past this. */
const KEY_CACHE_SIZE = 1_000;
const keys = new Map<string, Buffer>();

function keyOf(secret: string): Buffer {
  let key = keys.get(secret);
  if (!key) {
    key = Buffer.from(
      secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : secret,
      'base64',
    );
    if (keys.size >= KEY_CACHE_SIZE) {
      keys.clear();
    }
    keys.set(secret, key);
  }
  return key;
}

/**
 * The Standard Webhooks headers of one attempt: `webhook-signature` carries a `v1,` signature per
 * live secret (the new one, and the previous one during its overlap), space-separated, so a receiver
 * verifying with either secret accepts it. The signature is the scheme's HMAC-SHA256 of
 * `<id>.<timestamp>.<body>` under the secret's base64-decoded key, computed with node:crypto (the
 * `standardwebhooks` package, which receivers verify with, hashes in JavaScript: several times
 * slower); src/webhooks/webhook-signer.spec.ts checks the two agree.
 */
export function signatureHeaders(
  eventId: string,
  body: string,
  secrets: readonly string[],
  at: Date = new Date(),
): Record<string, string> {
  const timestamp = String(Math.floor(at.getTime() / 1000));
  const signed = `${eventId}.${timestamp}.${body}`;
  const signatures = secrets.map(
    (secret) => `v1,${createHmac('sha256', keyOf(secret)).update(signed).digest('base64')}`,
  );
  return {
    'webhook-id': eventId,
    'webhook-timestamp': timestamp,
    'webhook-signature': signatures.join(' '),
  };
}
