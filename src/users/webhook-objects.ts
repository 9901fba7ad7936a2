import type { User } from '../domain/user.js';
import { toRestUser } from './users.mapper.js';
import type { UserResponse } from './dto/user.response.js';

/** `data.object` of a user event: the REST representation an ADMIN reads (email included). */
export function webhookUserObject(user: User): UserResponse {
  return { ...toRestUser(user, undefined), email: user.email };
}
