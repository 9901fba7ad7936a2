import { Body, Controller, Get, HttpCode, Post, Req, Res } from '@nestjs/common';
import { ApiTags } from '@nestjs/swagger';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { NotFound, Unauthorized } from '../common/errors.js';
import { refuseWith, TOO_MANY_FAILURES } from '../common/rate-limit-headers.js';
import { PublicUrl } from '../common/public-url.js';
import { RegisterInput } from '../users/dto/user.inputs.js';
import { toRestUser } from '../users/users.mapper.js';
import { UsersService } from '../users/users.service.js';
import { Authenticated, CurrentCaller, Public } from './auth.decorators.js';
import type { Caller } from './caller.js';
import { CredentialsService } from './credentials.service.js';
import { RefreshInput, TokenInput } from './dto/auth.inputs.js';
import { SessionService } from './session.service.js';

@ApiTags('auth')
@Controller('auth')
export class AuthController {
  constructor(
    private readonly sessions: SessionService,
    private readonly users: UsersService,
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
  async token(
    @Body() input: TokenInput,
    @Req() req: FastifyRequest,
    @Res({ passthrough: true }) reply: FastifyReply,
  ) {
    const answer = await this.door.checkPassword(input.email, input.password, req.ip);
    if (answer.kind === 'throttled') {
      throw refuseWith(reply, answer.throttle.limit, answer.throttle, TOO_MANY_FAILURES);
    }
    if (answer.kind !== 'caller') {
      throw Unauthorized('Invalid email or password');
    }
    return this.sessions.issue(answer.caller.userId, answer.caller.role);
  }

  @Post('refresh')
  @Public()
  @HttpCode(200)
  refresh(@Body() input: RefreshInput) {
    return this.sessions.refresh(input.refresh_token);
  }

  /** Self-service sign-up: always creates a USER. */
  @Post('register')
  @Public()
  async register(@Body() input: RegisterInput, @Res({ passthrough: true }) reply: FastifyReply) {
    const user = await this.users.register(input);
    void reply.code(201).header('Location', `${this.publicUrl.base}/api/v1/users/${user.id}`);
    return { data: toRestUser(user, { userId: user.id, role: user.role, method: 'basic' }) };
  }

  @Get('me')
  @Authenticated()
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
