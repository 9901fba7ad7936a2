import type { AuditEntry } from '../audit/audit.service.js';
import { isAdmin, type Caller } from '../identity/caller.js';
import type { Change, ChangeActor } from '../changes/change.js';

function isCaller(actor: ChangeActor): actor is Caller {
  return actor !== null && actor !== 'system';
}

/**
 * Which changes the audit log records, and how (docs/admin.md "Audit log"): a user created by a
 * caller (not a registration or the boot), a role change (by a caller, or the boot's promotion), a
 * password set by an ADMIN, a deleted user, an order status changed by an ADMIN, every change of API
 * keys, OAuth clients and grants and webhook endpoints, and a last-admin refusal.
 *
 * The entries a change writes, in order (none for most).
 */
export function auditEntries(change: Change): AuditEntry[] {
  switch (change.type) {
    case 'user.created': {
      const { user, actor } = change;
      if (!isCaller(actor)) {
        return [];
      }
      return [
        {
          actor,
          action: 'user.created',
          target: { type: 'user', id: user.id },
          changes: {
            name: [null, user.name],
            email: [null, user.email],
            role: [null, user.role],
            age: [null, user.age],
          },
        },
      ];
    }
    case 'user.updated': {
      const { before, after, actor } = change;
      const target = { type: 'user', id: after.id };
      const entries: AuditEntry[] = [];
      if (before.role !== after.role) {
        if (actor === 'system') {
          entries.push({
            actor,
            action: 'admin.promoted_at_boot',
            target,
            changes: { role: [before.role, after.role] },
          });
        } else if (actor !== null) {
          entries.push({
            actor,
            action: 'user.role_changed',
            target,
            changes: { role: [before.role, after.role] },
          });
        }
      }
      if (change.passwordChanged && isCaller(actor) && isAdmin(actor)) {
        entries.push({ actor, action: 'user.password_set', target });
      }
      return entries;
    }
    case 'user.deleted':
      return [
        {
          actor: change.actor,
          action: 'user.deleted',
          target: { type: 'user', id: change.user.id },
        },
      ];
    case 'admin.removal_refused':
      return [
        {
          actor: change.actor,
          action: 'admin.removal_refused',
          target: { type: 'user', id: change.userId },
          changes: change.refused,
        },
      ];
    case 'order.status_changed':
      // a customer cancelling their own order is not a privileged change
      if (!isAdmin(change.actor)) {
        return [];
      }
      return [
        {
          actor: change.actor,
          action: 'order.status_changed',
          target: { type: 'order', id: change.after.id },
          changes: { status: [change.before.status, change.after.status] },
        },
      ];
    case 'api_key.created': {
      const { key } = change;
      return [
        {
          actor: change.actor,
          action: 'api_key.created',
          target: { type: 'api_key', id: key.id },
          changes: {
            name: [null, key.name],
            role: [null, key.role],
            user_id: [null, key.user_id],
            expires_at: [null, key.expires_at],
          },
        },
      ];
    }
    case 'api_key.revoked':
      return [
        {
          actor: change.actor,
          action: 'api_key.revoked',
          target: { type: 'api_key', id: change.keyId },
          changes: { revoked_at: [null, change.revokedAt] },
        },
      ];
    case 'oauth_client.created':
    case 'oauth_client.updated':
      return [
        {
          actor: change.actor,
          action: change.type,
          target: { type: 'oauth_client', id: change.clientId },
          changes: change.members,
        },
      ];
    case 'oauth_client.secret_rotated':
      // the secret itself is never recorded: only that it was rotated, and until when the old one works
      return [
        {
          actor: change.actor,
          action: 'oauth_client.secret_rotated',
          target: { type: 'oauth_client', id: change.clientId },
          changes: { previous_secret_expires_at: change.previousSecretExpiresAt },
        },
      ];
    case 'oauth_client.deleted':
      return [
        {
          actor: change.actor,
          action: 'oauth_client.deleted',
          target: { type: 'oauth_client', id: change.clientId },
        },
      ];
    case 'oauth_grant.revoked':
      return [
        {
          actor: change.actor,
          action: 'oauth_grant.revoked',
          target: { type: 'oauth_client', id: change.clientId },
          onBehalfOf: change.userId,
          changes: { scopes: [change.scopes, null] },
        },
      ];
    case 'webhook.created':
    case 'webhook.updated':
      return [
        {
          actor: change.actor,
          action: change.type,
          target: { type: 'webhook', id: change.endpointId },
          changes: change.members,
        },
      ];
    case 'webhook.deleted':
      return [
        {
          actor: change.actor,
          action: 'webhook.deleted',
          target: { type: 'webhook', id: change.endpointId },
        },
      ];
    case 'webhook.secret_rotated':
      // a member named like a secret would be dropped from the entry (AuditService): until when
      // the previous secret also signs is `overlap_ends_at`; never a secret
      return [
        {
          actor: change.actor,
          action: 'webhook.secret_rotated',
          target: { type: 'webhook', id: change.endpointId },
          changes: { overlap_ends_at: change.overlapEndsAt },
        },
      ];
    case 'webhook.disabled':
      return [
        {
          actor: change.actor,
          action: 'webhook.disabled',
          target: { type: 'webhook', id: change.endpointId },
          changes: { active: [true, false], disabled_reason: [null, change.reason] },
        },
      ];
    case 'graphql.trusted_documents_replaced':
      return [
        {
          actor: change.actor,
          action: 'graphql.trusted_documents_replaced',
          // audit_events.target_type holds 20 characters
          target: { type: 'graphql_manifest', id: String(change.version) },
          changes: { operations: change.operations },
        },
      ];
    case 'order.created':
    case 'post.created':
    case 'post.updated':
    case 'post.deleted':
    case 'room.created':
    case 'message.sent':
      return [];
  }
}
