import type { Caller } from '../identity/caller.js';
import type { Role } from '../identity/role.js';
import type { Message, MessageEvent, Room } from '../domain/message.js';
import type { Order } from '../domain/order.js';
import type { Post } from '../domain/post.js';
import type { User } from '../domain/user.js';

/**
 * The payload shapes below sit under every resource folder (the folder graph is acyclic): the
 * transport-neutral records of src/domain/, and the small shapes declared here. The subscribers that
 * turn a change into webhooks, audit entries, counters and events sit above the resources
 * (src/change-subscribers/).
 */

/** Members of a resource as `{member: [old, new]}` (REST names, no secret): an audit entry's `changes`. */
type MemberChanges = Record<string, [unknown, unknown]>;

/** A new API key as the audit log records it (never its secret). */
interface CreatedApiKey {
  id: string;
  user_id: string;
  name: string;
  role: Role;
  expires_at: string | null;
}

/**
 * Who made a change: a caller (REST, GraphQL), the server itself (`system`: the boot, the webhook
 * engine), or nobody signed in (`null`: a registration).
 */
export type ChangeActor = Caller | 'system' | null;

/**
 * What a write changed, recorded once inside its transaction (ChangeRecord, docs/data-integrity.md
 * "The change record"). The subscribers derive every side effect from it: the webhook outbox, the
 * audit log, the list counters and the event bus. A change says what happened to the domain, not
 * what must follow; which changes are audited, counted or sent as webhooks is the subscribers' rule.
 */
export type Change =
  // ---- users ----
  | { type: 'user.created'; user: User; actor: ChangeActor }
  /**
   * Any change of a live user's row: profile, email, role, password. `passwordChanged`: a new
   * password was set (the hash is not part of `User`).
   */
  | {
      type: 'user.updated';
      before: User;
      after: User;
      passwordChanged: boolean;
      actor: ChangeActor;
    }
  /** A soft delete; `user` as it was before. */
  | { type: 'user.deleted'; user: User; actor: Caller }
  /** A change refused by the last-admin rule (its own transaction: the change rolled back). */
  | {
      type: 'admin.removal_refused';
      userId: string;
      refused: Record<string, [unknown, unknown]>;
      actor: Caller;
    }
  // ---- orders ----
  | { type: 'order.created'; order: Order; actor: Caller }
  | { type: 'order.status_changed'; before: Order; after: Order; actor: Caller }
  // ---- posts ----
  | { type: 'post.created'; post: Post; actor: Caller }
  | { type: 'post.updated'; before: Post; after: Post; actor: Caller }
  /** A soft delete; `post` as it was before. */
  | { type: 'post.deleted'; post: Post; actor: Caller }
  // ---- rooms and messages ----
  | { type: 'room.created'; room: Room; actor: Caller }
  /** `event`: the message with its room and author, as subscribers of the room receive it. */
  | { type: 'message.sent'; message: Message; event: MessageEvent; actor: Caller }
  // ---- API keys ----
  | { type: 'api_key.created'; key: CreatedApiKey; actor: Caller }
  | { type: 'api_key.revoked'; keyId: string; revokedAt: string; actor: Caller }
  // ---- OAuth clients and grants ----
  /** `members`: the client's registered members as `{member: [old, new]}` (REST names, no secret). */
  | { type: 'oauth_client.created'; clientId: string; members: MemberChanges; actor: Caller }
  | { type: 'oauth_client.updated'; clientId: string; members: MemberChanges; actor: Caller }
  | {
      type: 'oauth_client.secret_rotated';
      clientId: string;
      /** Until when the previous secret works, before and after the rotation (never the secret). */
      previousSecretExpiresAt: [string | null, string | null];
      actor: Caller;
    }
  | { type: 'oauth_client.deleted'; clientId: string; actor: Caller }
  /** Every grant of `userId` to the client revoked; `scopes` they held. */
  | {
      type: 'oauth_grant.revoked';
      clientId: string;
      userId: string;
      scopes: string[];
      actor: Caller;
    }
  // ---- webhook endpoints ----
  /** `members`: the endpoint's members as `{member: [old, new]}` (REST names, no secret). */
  | { type: 'webhook.created'; endpointId: string; members: MemberChanges; actor: Caller }
  | { type: 'webhook.updated'; endpointId: string; members: MemberChanges; actor: Caller }
  | { type: 'webhook.deleted'; endpointId: string; actor: Caller }
  /** A new signing secret; `overlapEndsAt`: until when the previous one also signs (old, new). */
  | {
      type: 'webhook.secret_rotated';
      endpointId: string;
      overlapEndsAt: [string | null, string | null];
      actor: Caller;
    }
  /** The service turned an endpoint off (410 Gone, or failing too long). */
  | { type: 'webhook.disabled'; endpointId: string; reason: string; actor: 'system' }
  // ---- GraphQL trusted documents ----
  /**
   * The trusted documents manifest replaced: by an ADMIN (PUT), or at boot from a new
   * GRAPHQL_TRUSTED_DOCUMENTS file (`system`). `operations`: how many it listed, before and after.
   */
  | {
      type: 'graphql.trusted_documents_replaced';
      version: number;
      operations: [number | null, number];
      actor: Caller | 'system';
    };
