import { Column, Entity, PrimaryColumn } from 'typeorm';
import { Role } from '../identity/role.js';

/** Persistence shape only; never returned as a response (see users.mapper.ts). */
@Entity('users')
export class UserEntity {
  @PrimaryColumn({ type: 'varchar', length: 30 })
  id!: string;

  @Column({ type: 'varchar', length: 100 })
  name!: string;

  @Column({ type: 'varchar', length: 254, nullable: true })
  email!: string | null;

  @Column({ name: 'email_normalized', type: 'varchar', length: 254, nullable: true })
  emailNormalized!: string | null;

  @Column({ type: 'varchar', length: 5 })
  role!: Role;

  @Column({ type: 'integer', nullable: true })
  age!: number | null;

  @Column({ name: 'password_hash', type: 'varchar', length: 255, nullable: true })
  passwordHash!: string | null;

  /** Set when the password changes: first-party access tokens issued before it are refused. */
  @Column({ name: 'tokens_valid_after', type: 'varchar', length: 24, nullable: true })
  tokensValidAfter!: string | null;

  /**
   * Set by a password change, a demotion or a deletion: OAuth access tokens issued before it are
   * refused (docs/oauth.md "When a user's sign-in ends").
   */
  @Column({ name: 'oauth_valid_after', type: 'varchar', length: 24, nullable: true })
  oauthValidAfter!: string | null;

  @Column({ name: 'created_at', type: 'varchar', length: 24 })
  createdAt!: string;

  @Column({ name: 'updated_at', type: 'varchar', length: 24 })
  updatedAt!: string;

  @Column({ name: 'deleted_at', type: 'varchar', length: 24, nullable: true })
  deletedAt!: string | null;
}
