import { registerEnumType } from '@nestjs/graphql';
import { Role } from '../identity/role.js';

/** The one `Role` enum of the schema (also the argument type of `@auth(requires:)`). */
registerEnumType(Role, { name: 'Role', description: 'Roles by rank: ADMIN > USER > GUEST.' });

export { Role };
