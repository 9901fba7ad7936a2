import type { Role } from '../identity/role.js';

/** A user as the services hand it out: no password hash, camelCase, transport-neutral. */
export interface User {
  id: string;
  name: string;
  email: string | null;
  role: Role;
  age: number | null;
  createdAt: string;
  updatedAt: string;
}
