/**
 * What the credential door reads of the `users` table. The table's one repository
 * (src/users/users.repository.ts) implements it; the auth module binds the two, so "who is calling"
 * depends on no resource folder.
 */
export abstract class CredentialUsers {
  /** A live user's role, or undefined (deleted or unknown). */
  abstract liveRole(id: string): Promise<string | undefined>;
  /** A live user by normalized email: its id, role and password hash (null: no password sign-in). */
  abstract findLoginByEmail(
    emailNormalized: string,
  ): Promise<{ id: string; role: string; password_hash: string | null } | undefined>;
  /** A live user's role and the instant before which its tokens are refused. */
  abstract findTokenState(
    id: string,
  ): Promise<{ role: string; tokens_valid_after: string | null } | undefined>;
  /** A live user's role and password hash. */
  abstract findRoleAndPassword(
    id: string,
  ): Promise<{ role: string; password_hash: string | null } | undefined>;
}
