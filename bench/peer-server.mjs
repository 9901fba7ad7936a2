// The conventional NestJS stack, as the NestJS documentation teaches it, serving what the bench asks
// of Atrium over the same SQLite file: NestJS on Express (@nestjs/platform-express), TypeORM
// repositories (TypeOrmModule.forFeature + @InjectRepository), passport-jwt through @nestjs/passport
// (a JwtStrategy, AuthGuard('jwt') on the controller, a GqlAuthGuard on the resolvers) and Apollo
// Server through @nestjs/apollo (schema first, @Resolver/@Query/@ResolveField). bench/run.mjs starts it
// next to the app, so "how much cheaper than the peer" is measured in the same run
// (`peer rest-get-user`, `peer gql user(id)`, `peer gql 20 users with posts`).
//
//   PEER_PORT=4001 PEER_DATABASE=/tmp/app.sqlite PEER_JWT_PUBLIC_KEY="$(cat pub.pem)" \
//     node bench/peer-server.mjs
//
// Plain JavaScript: the decorators are applied as TypeScript would emit them (Reflect.decorate).
// Like the documentation's JwtStrategy, `validate` returns the token's claims without a database
// read; Atrium reads the caller's role on every request, so the comparison favours the peer.
import 'reflect-metadata';
import { ApolloDriver } from '@nestjs/apollo';
import {
  Controller,
  Get,
  Inject,
  Injectable,
  Module,
  NotFoundException,
  Param,
  UseGuards,
} from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import {
  Args,
  GqlExecutionContext,
  GraphQLModule,
  Parent,
  Query,
  ResolveField,
  Resolver,
} from '@nestjs/graphql';
import { AuthGuard, PassportModule, PassportStrategy } from '@nestjs/passport';
import { ExpressAdapter } from '@nestjs/platform-express';
import { InjectRepository, TypeOrmModule } from '@nestjs/typeorm';
import { ExtractJwt, Strategy } from 'passport-jwt';
import { EntitySchema, IsNull } from 'typeorm';

const port = Number(process.env.PEER_PORT ?? 0);
const database = process.env.PEER_DATABASE;
const publicKey = process.env.PEER_JWT_PUBLIC_KEY;
if (!database || !publicKey) {
  throw new Error('PEER_DATABASE and PEER_JWT_PUBLIC_KEY are required');
}

const timestamp = (name) => ({ name, type: 'varchar', length: 24 });
const UserEntity = new EntitySchema({
  name: 'User',
  tableName: 'users',
  columns: {
    id: { type: 'varchar', primary: true },
    name: { type: 'varchar' },
    email: { type: 'varchar', nullable: true },
    role: { type: 'varchar' },
    createdAt: timestamp('created_at'),
    updatedAt: timestamp('updated_at'),
    deletedAt: { ...timestamp('deleted_at'), nullable: true },
  },
});
const PostEntity = new EntitySchema({
  name: 'Post',
  tableName: 'posts',
  columns: {
    id: { type: 'varchar', primary: true },
    authorId: { name: 'author_id', type: 'varchar' },
    title: { type: 'varchar' },
    body: { type: 'text' },
    createdAt: timestamp('created_at'),
    updatedAt: timestamp('updated_at'),
    deletedAt: { ...timestamp('deleted_at'), nullable: true },
  },
});

const typeDefs = /* GraphQL */ `
  type Query {
    user(id: ID!): User
    users(first: Int = 20): UserConnection!
  }
  type User {
    id: ID!
    name: String!
    email: String
    role: String!
    createdAt: String!
    posts(first: Int = 20): PostConnection!
  }
  type UserConnection {
    nodes: [User!]!
  }
  type PostConnection {
    totalCount: Int!
    nodes: [Post!]!
  }
  type Post {
    id: ID!
    title: String!
  }
`;

const decorate = (decorators, target, key, descriptor) =>
  Reflect.decorate(decorators, target, key, descriptor);
const method = (cls, name, decorators) =>
  decorate(decorators, cls.prototype, name, Object.getOwnPropertyDescriptor(cls.prototype, name));
// a constructor parameter's decorator gets the class, a method parameter's the prototype
const param = (cls, name, index, decorator) =>
  decorator(name === undefined ? cls : cls.prototype, name, index);

// --- auth: passport-jwt -------------------------------------------------------------------------
class JwtStrategy extends PassportStrategy(Strategy) {
  constructor() {
    super({
      jwtFromRequest: ExtractJwt.fromAuthHeaderAsBearerToken(),
      ignoreExpiration: false,
      secretOrKey: publicKey,
      algorithms: ['RS256'],
    });
  }

  validate(payload) {
    return { userId: payload.sub, role: payload.role };
  }
}
decorate([Injectable()], JwtStrategy);

class JwtAuthGuard extends AuthGuard('jwt') {}
decorate([Injectable()], JwtAuthGuard);

class GqlAuthGuard extends AuthGuard('jwt') {
  getRequest(context) {
    return GqlExecutionContext.create(context).getContext().req;
  }
}
decorate([Injectable()], GqlAuthGuard);

// --- users: a service over TypeORM repositories ---------------------------------------------------
class UsersService {
  constructor(users, posts) {
    this.users = users;
    this.posts = posts;
  }

  findOne(id) {
    return this.users.findOneBy({ id, deletedAt: IsNull() });
  }

  findPage(first) {
    return this.users.find({ where: { deletedAt: IsNull() }, order: { id: 'ASC' }, take: first });
  }

  async postsOf(authorId, first) {
    const [nodes, totalCount] = await this.posts.findAndCount({
      where: { authorId, deletedAt: IsNull() },
      order: { createdAt: 'DESC', id: 'DESC' },
      take: first,
    });
    return { nodes, totalCount };
  }
}
decorate([Injectable()], UsersService);
param(UsersService, undefined, 0, InjectRepository(UserEntity));
param(UsersService, undefined, 1, InjectRepository(PostEntity));

const view = (u) => ({
  id: u.id,
  name: u.name,
  email: u.email,
  role: u.role,
  createdAt: u.createdAt,
  updatedAt: u.updatedAt,
});

class UsersController {
  constructor(users) {
    this.users = users;
  }

  async findOne(id) {
    const user = await this.users.findOne(id);
    if (!user) {
      throw new NotFoundException('User not found');
    }
    return { data: view(user) };
  }
}
decorate([Controller('api/v1/users'), UseGuards(JwtAuthGuard)], UsersController);
param(UsersController, undefined, 0, Inject(UsersService));
param(UsersController, 'findOne', 0, Param('id'));
method(UsersController, 'findOne', [Get(':id')]);

class UsersResolver {
  constructor(users) {
    this.users = users;
  }

  user(id) {
    return this.users.findOne(id);
  }

  async users(first) {
    return { nodes: await this.users.findPage(first) };
  }
}
decorate([Resolver('Query'), UseGuards(GqlAuthGuard)], UsersResolver);
param(UsersResolver, undefined, 0, Inject(UsersService));
param(UsersResolver, 'user', 0, Args('id'));
param(UsersResolver, 'users', 0, Args('first'));
method(UsersResolver, 'user', [Query('user')]);
method(UsersResolver, 'users', [Query('users')]);

class UserFieldsResolver {
  constructor(users) {
    this.users = users;
  }

  posts(user, first) {
    return this.users.postsOf(user.id, first);
  }
}
decorate([Resolver('User')], UserFieldsResolver);
param(UserFieldsResolver, undefined, 0, Inject(UsersService));
param(UserFieldsResolver, 'posts', 0, Parent());
param(UserFieldsResolver, 'posts', 1, Args('first'));
method(UserFieldsResolver, 'posts', [ResolveField('posts')]);

class HealthController {
  ready() {
    return { status: 'ok' };
  }
}
decorate([Controller('health')], HealthController);
method(HealthController, 'ready', [Get('ready')]);

class UsersModule {}
decorate(
  [
    Module({
      imports: [TypeOrmModule.forFeature([UserEntity, PostEntity]), PassportModule],
      controllers: [UsersController],
      providers: [UsersService, UsersResolver, UserFieldsResolver, JwtStrategy],
    }),
  ],
  UsersModule,
);

class AppModule {}
decorate(
  [
    Module({
      imports: [
        TypeOrmModule.forRoot({
          type: 'better-sqlite3',
          database,
          entities: [UserEntity, PostEntity],
          synchronize: false,
        }),
        GraphQLModule.forRoot({
          driver: ApolloDriver,
          typeDefs,
          context: ({ req }) => ({ req }),
        }),
        UsersModule,
      ],
      controllers: [HealthController],
    }),
  ],
  AppModule,
);

const app = await NestFactory.create(AppModule, new ExpressAdapter(), {
  logger: ['error', 'warn'],
});
app.enableShutdownHooks();
await app.listen(port, '127.0.0.1');
console.log(`peer listening on ${await app.getUrl()}`);
