/**
 * What the credential door reads of the `users` table. The table's one repository
 * (src/users/users.repository.ts) implements it; the auth module binds the two, so "who is calling"
 * depends on no resource folder.
 */
export interface TokenState {
  role: string;
  tokens_valid_after: string | null;
}

export abstract class CredentialUsers {
  /** A live user's role, or undefined (deleted or unknown). */
  abstract liveRole(id: string): Promise<string | undefined>;
  /** A live user by normalized email: its id, role and password hash (null: no password sign-in). */
  abstract findLoginByEmail(
    emailNormalized: string,
  ): Promise<{ id: string; role: string; password_hash: string | null } | undefined>;
  /**
   * A live user's role and the instant before which its tokens are refused. The answer is a new
   * object per call: the caller it admits keeps it (`Caller.rights`), so that the users module can
   * hand out the user row read in the same statement (a request for the caller's own user then
   * reads the table once).
   */
  abstract findTokenState(id: string): Promise<TokenState | undefined>;
  /** A live user's role and password hash. */
  abstract findRoleAndPassword(
    id: string,
  ): Promise<{ role: string; password_hash: string | null } | undefined>;
}
