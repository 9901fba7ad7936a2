import { Int, Parent, ResolveField, Resolver } from '@nestjs/graphql';
import type { User } from './user.js';
import { UserModel } from './user.model.js';

/** Type extension: adds `age: Int` to `User` (the spec declares it as an extension of the type). */
@Resolver(() => UserModel)
export class UserAgeExtension {
  @ResolveField('age', () => Int, { nullable: true, description: '0-150, or null when unknown.' })
  age(@Parent() user: User): number | null {
    return user.age;
  }
}
