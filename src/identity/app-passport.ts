import { Injectable } from '@nestjs/common';
import passport from 'passport';

/** A request as passport strategies read it: the carrier's headers and query only. */
export interface CarrierRequest {
  headers: Record<string, string | string[] | undefined>;
  query?: unknown;
}

/**
 * Stands in for passport's process-global instance in @nestjs/passport's strategy mixin (its
 * `getPassportInstance()`), so that constructing a strategy registers nothing process-wide: each
 * strategy registers itself on its application's `AppPassport` instead.
 */
export const NOT_GLOBAL: { use(): unknown } = {
  use: () => NOT_GLOBAL,
};

/**
 * This application's own passport `Authenticator`. Strategies used to be registered on passport's
 * process-global instance, so a second application in the same process (tests, scale-out checks)
 * replaced the first one's strategies, bound to the second one's database, and closing it left the
 * first answering 500 to every credential check. One instance per application (a provider of
 * AuthModule) keeps each application's strategies its own.
 */
@Injectable()
export class AppPassport {
  private readonly passport = new passport.Authenticator();

  use(name: string, strategy: passport.Strategy): void {
    this.passport.use(name, strategy);
  }

  /**
   * Runs one registered strategy on a carrier: its user (our caller or claims), or undefined when
   * the strategy failed (wrong or missing credentials). A strategy error (the database is down)
   * rejects: that is a 500, not a 401.
   */
  run<T>(name: string, req: CarrierRequest): Promise<T | undefined> {
    return new Promise<T | undefined>((resolve, reject) => {
      const middleware = this.passport.authenticate(
        name,
        { session: false },
        (err: unknown, user: T | false | null) => {
          if (err) {
            reject(err instanceof Error ? err : new Error('credential check failed'));
          } else {
            resolve(user || undefined);
          }
        },
      ) as (req: unknown, res: unknown, next: (err?: unknown) => void) => void;
      middleware(req, {}, (err?: unknown) =>
        reject(err instanceof Error ? err : new Error('unexpected passport pass')),
      );
    });
  }
}
