import { hash, verify, type Options } from '@node-rs/argon2';
import type { PasswordHashProfile } from '../config/config.js';

/**
 * argon2id parameters. `owasp` is OWASP's second recommended set (19 MiB, t=2, p=1), the only one
 * outside tests. `test` (1 MiB, t=1) exists for the test suite's thousands of hashes; the
 * configuration accepts it only with NODE_ENV=test (PASSWORD_HASH_PROFILE, src/config/config.ts).
 * A stored hash names its own parameters, so verification works whichever profile made it.
 */
const PARAMETERS: Record<PasswordHashProfile, Options> = {
  owasp: { memoryCost: 19_456, timeCost: 2, parallelism: 1 },
  test: { memoryCost: 1_024, timeCost: 1, parallelism: 1 },
};

export function hashPassword(
  password: string,
  profile: PasswordHashProfile = 'owasp',
): Promise<string> {
  return hash(password, PARAMETERS[profile]);
}

export async function verifyPassword(stored: string, password: string): Promise<boolean> {
  try {
    return await verify(stored, password);
  } catch {
    return false;
  }
}

/**
 * A fixed hash (of the profile new hashes use) to verify against when the email is unknown, so
 * timing does not reveal accounts.
 */
const dummyHashes = new Map<PasswordHashProfile, Promise<string>>();
export function dummyPasswordHash(profile: PasswordHashProfile = 'owasp'): Promise<string> {
  let dummy = dummyHashes.get(profile);
  if (dummy === undefined) {
    dummy = hashPassword('atrium-dummy-password-for-timing', profile);
    dummyHashes.set(profile, dummy);
  }
  return dummy;
}
