/** Actions the audit log records (docs/admin.md "Audit log"). */
export const AUDIT_ACTIONS = [
  'user.created',
  'user.deleted',
  'user.role_changed',
  'user.password_set',
  'api_key.created',
  'api_key.revoked',
  'oauth_client.created',
  'oauth_client.updated',
  'oauth_client.deleted',
  'oauth_client.secret_rotated',
  'oauth_grant.revoked',
  'webhook.created',
  'webhook.updated',
  'webhook.deleted',
  'webhook.disabled',
  'webhook.secret_rotated',
  'order.status_changed',
  'admin.removal_refused',
  'admin.promoted_at_boot',
  'graphql.trusted_documents_replaced',
] as const;
export type AuditAction = (typeof AUDIT_ACTIONS)[number];

export const ACTOR_TYPES = ['user', 'api_key', 'oauth_client', 'system'] as const;
export type ActorType = (typeof ACTOR_TYPES)[number];

/** `{member: [old, new]}` in REST member names and values; never a secret or a hash. */
export type AuditChanges = Record<string, [unknown, unknown]>;

/** One entry, in its REST representation. */
export interface AuditEvent {
  id: string;
  at: string;
  actor: { type: ActorType; id: string | null };
  on_behalf_of: string | null;
  action: AuditAction;
  target: { type: string; id: string };
  changes: AuditChanges;
  request_id: string | null;
  ip: string | null;
}
