import { createHmac, timingSafeEqual } from 'node:crypto';
import { Inject, Injectable, Logger } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { InteractionResults } from 'oidc-provider';
import { APP_CONFIG, type AppConfig } from '../../config/config.js';
import { secondsUntil } from '../../rate-limit/rate-limit.service.js';
import { UsersService } from '../../users/users.service.js';
import { CredentialsService } from '../../identity/credentials.service.js';
import { consentPage, errorPage, loginPage, type Page } from './oauth-pages.js';
import { OidcProviderService } from './oidc-provider.service.js';

type Form = Record<string, string | undefined>;

type InteractionDetails = Awaited<
  ReturnType<OidcProviderService['provider']['interactionDetails']>
>;

interface PromptDetails {
  missingOIDCScope?: string[];
  missingOIDCClaims?: string[];
  missingResourceScopes?: Record<string, string[]>;
}

const WRONG_PASSWORD = 'That email and password do not match an Atrium account. Try again.';

/**
 * The sign-in and consent pages of the authorization server (`/oauth/interaction/{uid}`): plain
 * server-rendered forms. Forms are CSRF-safe: the interaction cookie is SameSite=Lax and bound to
 * the uid by oidc-provider, and every form carries an HMAC of the uid that another site cannot know.
 */
@Injectable()
export class OAuthInteractionsService {
  private readonly logger = new Logger('OAuthInteractions');

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly oidc: OidcProviderService,
    private readonly door: CredentialsService,
    private readonly users: UsersService,
  ) {}

  private get provider() {
    return this.oidc.provider;
  }

  csrfFor(uid: string): string {
    return createHmac('sha256', this.oidc.formKey).update(`csrf:${uid}`).digest('base64url');
  }

  private csrfValid(uid: string, form: Form, req: FastifyRequest): boolean {
    const origin = req.headers.origin;
    // "null" is what a browser sends for a form post under Referrer-Policy: no-referrer
    if (origin && origin !== 'null' && origin !== `${req.protocol}://${req.host}`) {
      return false;
    }
    const expected = Buffer.from(this.csrfFor(uid));
    const given = Buffer.from(form.csrf ?? '');
    return given.length === expected.length && timingSafeEqual(given, expected);
  }

  private send(reply: FastifyReply, page: Page): FastifyReply {
    return reply.code(page.status).headers(page.headers).send(page.html);
  }

  private async details(req: FastifyRequest, reply: FastifyReply) {
    try {
      return await this.provider.interactionDetails(req.raw, reply.raw);
    } catch (err) {
      if (err instanceof this.oidc.lib.errors.SessionNotFound) {
        this.send(reply, errorPage('session_not_found', undefined, 400));
        return undefined;
      }
      throw err;
    }
  }

  private formTargets(details: InteractionDetails): string[] {
    const uri = details.params.redirect_uri;
    try {
      return typeof uri === 'string' ? [new URL(uri).origin] : [];
    } catch {
      return [];
    }
  }

  private async clientName(details: InteractionDetails): Promise<string> {
    const client = await this.provider.Client.find(String(details.params.client_id));
    return client?.clientName ?? String(details.params.client_id);
  }

  async show(req: FastifyRequest<{ Params: { uid: string } }>, reply: FastifyReply) {
    const details = await this.details(req, reply);
    if (!details) {
      return reply;
    }
    if (details.prompt.name === 'login') {
      return this.send(reply, await this.loginView(details));
    }
    return this.send(reply, await this.consentView(details));
  }

  private async loginView(
    details: InteractionDetails,
    extra: { error?: string; email?: string; status?: number } = {},
  ): Promise<Page> {
    return loginPage({
      uid: details.uid,
      csrf: this.csrfFor(details.uid),
      clientName: await this.clientName(details),
      formTargets: this.formTargets(details),
      email:
        extra.email ??
        (typeof details.params.login_hint === 'string' ? details.params.login_hint : undefined),
      error: extra.error,
      status: extra.status,
    });
  }

  private async consentView(details: InteractionDetails): Promise<Page> {
    const user = details.session?.accountId
      ? await this.users.findById(details.session.accountId)
      : undefined;
    const scope = details.params.scope;
    const requested = (typeof scope === 'string' ? scope : '').split(' ').filter((s) => s !== '');
    const client = await this.provider.Client.find(String(details.params.client_id));
    return consentPage({
      uid: details.uid,
      csrf: this.csrfFor(details.uid),
      clientName: client?.clientName ?? String(details.params.client_id),
      logoUri: client?.logoUri,
      clientUri: client?.clientUri,
      policyUri: client?.policyUri,
      tosUri: client?.tosUri,
      clientId: String(details.params.client_id),
      userLabel: user ? (user.email ?? user.name) : 'unknown user',
      scopes: requested,
      formTargets: this.formTargets(details),
    });
  }

  /**
   * The interaction a form was posted to, once its CSRF token and origin check out; undefined when
   * the answer (an error page) has already been sent.
   */
  private async postedDetails(
    req: FastifyRequest<{ Params: { uid: string } }>,
    reply: FastifyReply,
  ): Promise<InteractionDetails | undefined> {
    const details = await this.details(req, reply);
    if (!details) {
      return undefined;
    }
    if (!this.csrfValid(details.uid, (req.body ?? {}) as Form, req)) {
      this.send(reply, errorPage('invalid_request', 'The form was not sent from this page', 403));
      return undefined;
    }
    return details;
  }

  async login(req: FastifyRequest<{ Params: { uid: string } }>, reply: FastifyReply) {
    const details = await this.postedDetails(req, reply);
    if (!details) {
      return reply;
    }
    const form = (req.body ?? {}) as Form;
    if (details.prompt.name !== 'login') {
      return reply.redirect(`/oauth/interaction/${details.uid}`, 303);
    }
    const email = (form.email ?? '').trim();
    // the same rules as every password check (docs/rate-limits.md): counted per address and per
    // account; past the account's bucket (or the address's hard limit) the password is not checked
    const answer =
      email && form.password
        ? await this.door.checkPassword(email, form.password, req.ip, req.id)
        : ({ kind: 'invalid' } as const);
    if (answer.kind === 'throttled') {
      const retry = secondsUntil(answer.throttle.resetMs);
      void reply.header('Retry-After', String(retry));
      return this.send(
        reply,
        await this.loginView(details, {
          email,
          status: 429,
          error: `Too many sign-in attempts. Try again in ${retry} seconds.`,
        }),
      );
    }
    if (answer.kind !== 'caller') {
      return this.send(reply, await this.loginView(details, { email, error: WRONG_PASSWORD }));
    }
    const caller = answer.caller;
    const result: InteractionResults = {
      login: { accountId: caller.userId, amr: ['pwd'], remember: true },
    };
    const returnTo = await this.provider.interactionResult(req.raw, reply.raw, result, {
      mergeWithLastSubmission: false,
    });
    return reply.redirect(returnTo, 303);
  }

  async confirm(req: FastifyRequest<{ Params: { uid: string } }>, reply: FastifyReply) {
    const details = await this.postedDetails(req, reply);
    if (!details) {
      return reply;
    }
    const accountId = details.session?.accountId;
    if (details.prompt.name !== 'consent' || !accountId) {
      return reply.redirect(`/oauth/interaction/${details.uid}`, 303);
    }
    const prompt = details.prompt.details as PromptDetails;
    const clientId = String(details.params.client_id);
    const grant = details.grantId
      ? ((await this.provider.Grant.find(details.grantId)) ??
        new this.provider.Grant({ accountId, clientId }))
      : new this.provider.Grant({ accountId, clientId });
    if (prompt.missingOIDCScope?.length) {
      grant.addOIDCScope(prompt.missingOIDCScope.join(' '));
    }
    if (prompt.missingOIDCClaims?.length) {
      grant.addOIDCClaims(prompt.missingOIDCClaims);
    }
    for (const [indicator, scopes] of Object.entries(prompt.missingResourceScopes ?? {})) {
      grant.addResourceScope(indicator, scopes.join(' '));
    }
    const grantId = await grant.save();
    const result: InteractionResults = { consent: { grantId } };
    const returnTo = await this.provider.interactionResult(req.raw, reply.raw, result, {
      mergeWithLastSubmission: true,
    });
    return reply.redirect(returnTo, 303);
  }

  /** Deny (or cancel the sign-in): the app gets `error=access_denied`. */
  async abort(req: FastifyRequest<{ Params: { uid: string } }>, reply: FastifyReply) {
    const details = await this.postedDetails(req, reply);
    if (!details) {
      return reply;
    }
    const returnTo = await this.provider.interactionResult(
      req.raw,
      reply.raw,
      { error: 'access_denied', error_description: 'The user denied the request' },
      { mergeWithLastSubmission: false },
    );
    this.logger.debug(`interaction ${details.uid} denied`);
    return reply.redirect(returnTo, 303);
  }
}
