import type { Adapter, AdapterPayload } from 'oidc-provider';
import type { OidcLibrary } from './oidc-library.js';
import type { OAuthArtifactsRepository } from '../../identity/oauth-artifacts.repository.js';
import type { OAuthClientRecord, OAuthClientsRepository } from './oauth-clients.repository.js';

/** A registered client as oidc-provider's client metadata (RFC 7591 names). */
function clientMetadata(client: OAuthClientRecord): AdapterPayload {
  return {
    client_id: client.clientId,
    client_name: client.name,
    // the SHA-256 of the secret (and, during a rotation's overlap, of the previous one):
    // compareClientSecret is replaced to hash what the client presents (secretHashes)
    ...(client.secretHash ? { client_secret: encodeSecretHashes(client) } : {}),
    redirect_uris: client.redirectUris,
    response_types: ['code'],
    grant_types: client.scopes.includes('offline_access')
      ? ['authorization_code', 'refresh_token']
      : ['authorization_code'],
    token_endpoint_auth_method: client.isPublic ? 'none' : 'client_secret_basic',
    scope: client.scopes.join(' '),
    application_type: 'web',
    ...(client.logoUri ? { logo_uri: client.logoUri } : {}),
    ...(client.clientUri ? { client_uri: client.clientUri } : {}),
    ...(client.policyUri ? { policy_uri: client.policyUri } : {}),
    ...(client.tosUri ? { tos_uri: client.tosUri } : {}),
  };
}

/** `<hash>` or, while a rotated-out secret still works, `<hash> <previous hash> <until ms>`. */
function encodeSecretHashes(client: OAuthClientRecord): string {
  const until = client.previousSecretExpiresAt ? Date.parse(client.previousSecretExpiresAt) : 0;
  if (client.previousSecretHash && until > Date.now()) {
    return `${client.secretHash} ${client.previousSecretHash} ${until}`;
  }
  return client.secretHash ?? '';
}

/** The secret hashes a presented secret may match now (see encodeSecretHashes). */
export function secretHashes(stored: string | undefined): string[] {
  const [current, previous, until] = (stored ?? '').split(' ');
  const hashes = current ? [current] : [];
  if (previous && Number(until) > Date.now()) {
    hashes.push(previous);
  }
  return hashes;
}

/**
 * oidc-provider's storage over the database (one class per model name). Clients come from the
 * registry table; every other artefact from `oauth_artifacts`. `consume` is a conditional UPDATE:
 * a code or refresh token already consumed (by this instance or another, even a millisecond
 * earlier) is refused with invalid_grant and its grant revoked, as a replay (RFC 6749 section 4.1.2).
 */
export function databaseAdapter(
  artifacts: OAuthArtifactsRepository,
  clients: OAuthClientsRepository,
  errors: OidcLibrary['errors'],
): new (name: string) => Adapter {
  return class DatabaseAdapter implements Adapter {
    constructor(private readonly name: string) {}

    async upsert(id: string, payload: AdapterPayload, expiresIn: number): Promise<void> {
      if (this.name === 'Client') {
        throw new Error('clients are registered through /api/v1/oauth/clients only');
      }
      await artifacts.upsert(this.name, id, payload, expiresIn);
    }

    async find(id: string): Promise<AdapterPayload | undefined> {
      if (this.name === 'Client') {
        const client = await clients.find(id);
        return client ? clientMetadata(client) : undefined;
      }
      return await artifacts.find(this.name, id);
    }

    async findByUid(uid: string): Promise<AdapterPayload | undefined> {
      return await artifacts.findByUid(this.name, uid);
    }

    findByUserCode(): Promise<AdapterPayload | undefined> {
      return Promise.resolve(undefined); // no device flow
    }

    async consume(id: string): Promise<void> {
      if (await artifacts.consume(this.name, id)) {
        return;
      }
      const payload = await artifacts.find(this.name, id);
      if (payload?.grantId) {
        await artifacts.revokeGrant(payload.grantId);
      }
      throw new errors.InvalidGrant(
        `${this.name === 'RefreshToken' ? 'refresh token' : 'grant'} already used`,
      );
    }

    async destroy(id: string): Promise<void> {
      await artifacts.destroy(this.name, id);
    }

    async revokeByGrantId(grantId: string): Promise<void> {
      await artifacts.revokeGrant(grantId);
    }
  };
}
