import { hasRole, isAdmin, type Caller, type MaybeCaller } from '../identity/caller.js';
import { Role } from '../identity/role.js';
import { Forbidden, Unauthorized } from '../common/errors.js';
import type { PatchUserInput } from './dto/user.inputs.js';
import type { UserEntity } from './user.entity.js';

/** Who may do what to users (docs/contract.md section 7; docs/oauth.md for partner apps). */

export function requireRead(caller: MaybeCaller): asserts caller is Caller {
  if (!caller) {
    throw Unauthorized();
  }
}

export function requireAdmin(caller: MaybeCaller, message: string): asserts caller is Caller {
  requireRead(caller);
  if (!isAdmin(caller)) {
    throw Forbidden(message);
  }
}

/** USER may change only themself; GUEST nothing; ADMIN anyone (docs/contract.md section 7). */
export function requireSelfOrAdmin(caller: Caller, id: string): void {
  if (isAdmin(caller)) {
    return;
  }
  if (!hasRole(caller, Role.USER) || caller.userId !== id) {
    throw Forbidden('You may only change your own user');
  }
}

/**
 * What a partner app (an OAuth access token) may never do, whatever its scopes: set anyone's email,
 * password or role, which creating a user does (docs/oauth.md "What each scope allows").
 */
export function refuseAccountFieldsToApps(caller: Caller, what: string): void {
  if (caller.method === 'oauth') {
    throw Forbidden(`A partner app cannot ${what}: email, password and role stay first-party`);
  }
}

/**
 * A partner app's change to a user (docs/oauth.md): never an email, password or role (a PUT may
 * repeat the current values); without the `admin` scope only the profile name (its token acts at
 * USER rank, so only on its own user); with it also the age, of any user.
 */
export function partnerAppMayPatch(
  caller: Caller,
  patch: PatchUserInput,
  current: UserEntity,
): void {
  if (caller.method !== 'oauth') {
    return;
  }
  const changes = (member: keyof PatchUserInput, value: unknown) =>
    patch[member] !== undefined && patch[member] !== value;
  if (
    patch.password !== undefined ||
    changes('email', current.email) ||
    changes('role', current.role)
  ) {
    throw Forbidden('A partner app cannot change an email, password or role');
  }
  if (!caller.scopes?.includes('admin') && changes('age', current.age)) {
    throw Forbidden('The users:write scope changes the profile name only');
  }
}
