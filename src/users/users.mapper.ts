import { isAdmin, type MaybeCaller } from '../identity/caller.js';
import { ID_PREFIXES } from '../common/ids.js';
import type { UserResponse } from './dto/user.response.js';
import type { User } from '../domain/user.js';
import { ADMIN_PERMISSIONS, type AdminModel } from './user.model.js';
import type { UserEntity } from './user.entity.js';

/** `adm_<ULID>` for the user `usr_<ULID>`: one administrator, one id of its own. */
function adminIdOf(userId: string): string {
  return `${ID_PREFIXES.admin}_${userId.slice(ID_PREFIXES.user.length + 1)}`;
}

/** The GraphQL `Admin` of an ADMIN user. */
export function toAdminModel(user: User): AdminModel {
  return {
    id: adminIdOf(user.id),
    userId: user.id,
    name: user.name,
    email: user.email,
    permissions: ADMIN_PERMISSIONS,
  };
}

/** The `usr_` id behind an `adm_` id. */
export function userIdOfAdmin(adminId: string): string {
  return `${ID_PREFIXES.user}_${adminId.slice(ID_PREFIXES.admin.length + 1)}`;
}

/**
 * Email visibility (docs/contract.md section 4): only the user themself and ADMINs see it; a
 * partner app's token (OAuth) only when it also carries the `email` scope (docs/oauth.md).
 */
export function canSeeEmail(user: Pick<User, 'id'>, viewer: MaybeCaller): boolean {
  if (viewer?.method === 'oauth' && !viewer.scopes?.includes('email')) {
    return false;
  }
  return viewer !== undefined && (viewer.userId === user.id || isAdmin(viewer));
}

export function userFromEntity(e: UserEntity): User {
  return {
    id: e.id,
    name: e.name,
    email: e.email,
    role: e.role,
    age: e.age,
    createdAt: e.createdAt,
    updatedAt: e.updatedAt,
  };
}

/** REST body of a user (snake_case), as seen by `viewer`. */
export function toRestUser(user: User, viewer: MaybeCaller): UserResponse {
  return {
    id: user.id,
    name: user.name,
    email: canSeeEmail(user, viewer) ? user.email : null,
    role: user.role,
    age: user.age,
    created_at: user.createdAt,
    updated_at: user.updatedAt,
  };
}
