import type { User } from '../domain/user.js';

/** A `users` row as the repository's raw SQL reads it (`USER_COLUMNS`), and the `User` it holds. */
export interface UserRow {
  id: string;
  name: string;
  email: string | null;
  role: string;
  age: number | string | null;
  created_at: string;
  updated_at: string;
}

export const USER_COLUMNS = 'id, name, email, role, age, created_at, updated_at';

export function userFromRow(row: UserRow): User {
  return {
    id: row.id,
    name: row.name,
    email: row.email,
    role: row.role as User['role'],
    // PostgreSQL drivers may hand integers back as strings
    age: row.age === null ? null : Number(row.age),
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}
