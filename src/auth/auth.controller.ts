import { Body, Controller, Get, HttpCode, Post, Req, Res } from '@nestjs/common';
import { ApiTags } from '@nestjs/swagger';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { withEtag } from '../http/etag.js';
import { DomainError, NotFound, Unauthorized } from '../common/errors.js';
import { refuseWith, TOO_MANY_FAILURES } from '../common/rate-limit-headers.js';
import {
  ApiBare,
  ApiDoc,
  ApiNoContent,
  ApiSingle,
  ApiStandardErrors,
} from '../common/openapi/decorators.js';
import { PublicUrl } from '../http/public-url.js';
import { RegisterInput } from '../users/dto/user.inputs.js';
import { MeResponse, UserResponse } from '../users/dto/user.response.js';
import { toRestUser } from '../users/users.mapper.js';
import { UsersService } from '../users/users.service.js';
import { UserAccountsService } from '../users/user-accounts.service.js';
import { Authenticated, CurrentCaller, Public } from '../identity/auth.decorators.js';
import type { Caller } from '../identity/caller.js';
import { CredentialsService } from '../identity/credentials.service.js';
import { Role } from '../identity/role.js';
import { RefreshInput, TokenInput } from './dto/auth.inputs.js';
import { TokenPair } from './dto/auth.responses.js';
import { SessionService } from './session.service.js';
import { Idempotent } from '../idempotency/idempotent.decorator.js';

@ApiTags('auth')
@Controller('auth')
export class AuthController {
  constructor(
    private readonly sessions: SessionService,
    private readonly users: UsersService,
    private readonly accounts: UserAccountsService,
    private readonly publicUrl: PublicUrl,
    private readonly door: CredentialsService,
  ) {}

  /**
   * email + password -> access token (JWT), refresh token, expires_in. The password is checked by
   * the credential door: the same per-address and per-account buckets as Basic (docs/rate-limits.md).
   */
  @Post('token')
  @Public()
  @HttpCode(200)
  @ApiDoc(
    'Sign in: email and password for a token pair',
    'A JWT access token and a single-use refresh token. Failed checks count against the per-address and per-account buckets (429 past them, docs/rate-limits.md).',
  )
  @ApiBare(TokenPair, 'The token pair')
  @ApiStandardErrors('public-write', { unauthorized: 'Wrong email or password.' })
  async token(
    @Body() input: TokenInput,
    @Req() req: FastifyRequest,
    @Res({ passthrough: true }) reply: FastifyReply,
  ) {
    const answer = await this.door.checkPassword(input.email, input.password, req.ip, req.id);
    if (answer.kind === 'throttled') {
      throw refuseWith(reply, answer.throttle.limit, answer.throttle, TOO_MANY_FAILURES);
    }
    if (answer.kind !== 'caller') {
      throw Unauthorized('Invalid email or password');
    }
    return this.sessions.issue(answer.caller.userId, answer.caller.role);
  }

  /**
   * A refresh token -> a new pair. A wrong (unknown, used, expired) one counts against the address's
   * credential bucket (429 past it); a valid one is never refused by it (docs/rate-limits.md).
   */
  @Post('refresh')
  @Public()
  @HttpCode(200)
  @ApiDoc(
    'Trade a refresh token for a new pair',
    'The refresh token is single use; presenting a used one again revokes its whole family (docs/data-integrity.md).',
  )
  @ApiBare(TokenPair, 'The new token pair')
  @ApiStandardErrors('public-write', {
    unauthorized: 'Unknown, used, revoked or expired refresh token.',
  })
  async refresh(
    @Body() input: RefreshInput,
    @Req() req: FastifyRequest,
    @Res({ passthrough: true }) reply: FastifyReply,
  ) {
    try {
      return await this.sessions.refresh(input.refresh_token, {
        address: req.ip,
        requestId: req.id,
      });
    } catch (err) {
      if (err instanceof DomainError && err.code === 'unauthorized') {
        const answer = await this.door.failed(req.ip, 'refresh-token', req.id);
        if (answer.kind === 'throttled') {
          throw refuseWith(reply, answer.throttle.limit, answer.throttle, TOO_MANY_FAILURES);
        }
      }
      throw err;
    }
  }

  /**
   * Sign-out: the refresh token is the proof (a public route), and its whole family ends (every
   * token rotated from that sign-in); the access tokens already issued lapse by themselves within
   * JWT_ACCESS_TTL_S. An unknown, used or expired token changes nothing and is answered the same.
   */
  @Post('logout')
  @Public()
  @HttpCode(204)
  @ApiDoc(
    'Sign out: end the session of a refresh token',
    'Revokes the refresh token and every token rotated from the same sign-in (used or not). Answers 204 whether or not the token was known, so nothing is learned from it; access tokens already issued expire by themselves (JWT_ACCESS_TTL_S).',
  )
  @ApiNoContent('Signed out (the family of this refresh token no longer exists)')
  @ApiStandardErrors('public-write')
  async logout(@Body() input: RefreshInput): Promise<void> {
    await this.sessions.logout(input.refresh_token);
  }

  /** Self-service sign-up: always creates a USER. */
  @Post('register')
  @Idempotent()
  @Public()
  @ApiDoc('Sign up', 'Self-service registration; the new user is always a USER.')
  @ApiSingle(UserResponse, { status: 201, location: true })
  @ApiStandardErrors('public-write', { conflict: 'A live user already has this email.' })
  async register(@Body() input: RegisterInput, @Res({ passthrough: true }) reply: FastifyReply) {
    const user = await this.accounts.register(input);
    void reply.code(201).header('Location', `${this.publicUrl.base}/api/v1/users/${user.id}`);
    return withEtag(reply, toRestUser(user, { userId: user.id, role: user.role, method: 'basic' }));
  }

  @Get('me')
  @Authenticated({ role: Role.GUEST, scopes: [] })
  @ApiDoc(
    'Who am I',
    'The caller’s user and how they authenticated (method, effective role, API key).',
  )
  @ApiSingle(MeResponse)
  @ApiStandardErrors('authenticated')
  async me(@CurrentCaller() caller: Caller) {
    const user = await this.users.findById(caller.userId);
    if (!user) {
      throw NotFound('User');
    }
    return {
      data: {
        ...toRestUser(user, caller),
        auth: { method: caller.method, role: caller.role, key_id: caller.keyId ?? null },
      },
    };
  }
}
