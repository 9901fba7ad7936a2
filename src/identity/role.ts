/** Roles by rank: ADMIN > USER > GUEST (docs/contract.md section 7). */
export enum Role {
  ADMIN = 'ADMIN',
  USER = 'USER',
  GUEST = 'GUEST',
}

export const ROLES: readonly Role[] = [Role.ADMIN, Role.USER, Role.GUEST];

const RANK: Record<Role, number> = { [Role.GUEST]: 1, [Role.USER]: 2, [Role.ADMIN]: 3 };

export function roleAtLeast(role: Role, required: Role): boolean {
  return RANK[role] >= RANK[required];
}

export function lowerRole(a: Role, b: Role): Role {
  return RANK[a] <= RANK[b] ? a : b;
}

export function isRole(value: unknown): value is Role {
  return typeof value === 'string' && (ROLES as readonly string[]).includes(value);
}
