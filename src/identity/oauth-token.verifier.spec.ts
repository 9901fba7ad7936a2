import { generateKeyPairSync } from 'node:crypto';
import jwt from 'jsonwebtoken';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../config/config.js';
import type { TokenService } from './token.service.js';
import type { OAuthArtifactsRepository } from './oauth-artifacts.repository.js';
import { isOAuthAccessToken, OAuthTokenVerifier } from './oauth-token.verifier.js';

const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
const other = generateKeyPairSync('rsa', { modulusLength: 2048 });
const config = loadConfig({
  PUBLIC_URL: 'https://atrium.example',
  DATABASE_URL: 'sqlite::memory:',
});
// claims() needs only the public key; verify()'s grant lookup is covered by the e2e suites
const verifier = new OAuthTokenVerifier(
  config,
  { publicKey } as TokenService,
  {} as OAuthArtifactsRepository,
);

function token(
  claims: Record<string, unknown> = {},
  opts: { typ?: string; key?: typeof privateKey; alg?: jwt.Algorithm } = {},
): string {
  return jwt.sign(
    {
      sub: 'usr_1',
      client_id: 'cli_1',
      scope: 'users:read',
      gid: 'grant-1',
      iss: 'https://atrium.example/oauth',
      aud: 'https://atrium.example/api',
      exp: Math.floor(Date.now() / 1000) + 600,
      ...claims,
    },
    opts.key ?? privateKey,
    {
      algorithm: opts.alg ?? 'RS256',
      header: { alg: 'RS256', typ: opts.typ ?? 'at+jwt' },
    },
  );
}

describe('OAuthTokenVerifier.claims', () => {
  it('accepts an RFC 9068 token for the API audience', () => {
    expect(verifier.claims(token())).toMatchObject({
      sub: 'usr_1',
      client_id: 'cli_1',
      scope: 'users:read',
      gid: 'grant-1',
    });
    expect(isOAuthAccessToken(token())).toBe(true);
  });

  it.each([
    ['another type (a first-party JWT or an ID token)', token({}, { typ: 'JWT' })],
    ['another audience', token({ aud: 'atrium-api' })],
    ['another issuer', token({ iss: 'https://atrium.example' })],
    ['no grant id', token({ gid: undefined })],
    ['no client_id', token({ client_id: undefined })],
    ['another key', token({}, { key: other.privateKey })],
    ['an expired token', token({ exp: Math.floor(Date.now() / 1000) - 60 })],
  ])('refuses %s', (_label, t) => {
    expect(verifier.claims(t)).toBeUndefined();
  });

  it('tells OAuth tokens from others by their header only', () => {
    expect(isOAuthAccessToken(token({}, { typ: 'JWT' }))).toBe(false);
    expect(isOAuthAccessToken('not-a-jwt')).toBe(false);
  });
});
